//! The serializer against `bson::to_bson`, over BSON's types and serde's data model.

use std::collections::{BTreeMap, HashMap};

use bson::oid::ObjectId;
use bson::spec::BinarySubtype;
use bson::{doc, Binary, Bson, DateTime, Decimal128, Document, Regex, Timestamp};
use serde::Serialize;

/// `to_bson` gives what `bson::to_bson` gives: the same value (compared through `Debug`,
/// which tells NaNs and types apart), or the same error message.
fn same<T: Serialize + ?Sized>(what: &str, value: &T) {
    let ours = super::to_bson(value).map_err(|e| e.to_string());
    let theirs = bson::to_bson(value).map_err(|e| e.to_string());
    assert_eq!(format!("{ours:?}"), format!("{theirs:?}"), "{what}");
}

#[derive(Serialize)]
struct Trade {
    #[serde(rename = "type")]
    kind: String,
    ticker: String,
    qty: i64,
    price: f64,
    date: DateTime,
}

#[derive(Serialize)]
struct Unit;

/// Serialized as bytes.
struct Bytes(&'static [u8]);

impl Serialize for Bytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

#[derive(Serialize)]
struct Wrapper(i32);

#[derive(Serialize)]
struct Pair(i32, String);

#[derive(Serialize)]
enum Kind {
    Plain,
    New(i64),
    Tuple(i32, bool),
    Fields { a: u8, b: Option<String> },
}

#[derive(Serialize)]
struct Inner {
    x: u16,
}

#[derive(Serialize)]
struct Outer {
    #[serde(flatten)]
    inner: Inner,
    #[serde(skip_serializing_if = "Option::is_none")]
    skipped: Option<i32>,
    one: Inner,
    two: (u32, f32),
}

/// A struct of one field named like an Extended JSON key.
#[derive(Serialize)]
struct Dollar<T> {
    #[serde(rename = "$date")]
    date: T,
}

#[derive(Serialize)]
struct NumberLong {
    #[serde(rename = "$numberLong")]
    n: String,
}

#[derive(Serialize)]
struct Oid {
    #[serde(rename = "$oid")]
    oid: String,
}

#[test]
fn same_values_as_bson_for_bsons_types() {
    let oid = ObjectId::parse_str("653a8f3e2b1c4d5e6f708192").unwrap();
    same(
        "trade",
        &Trade {
            kind: "buy".into(),
            ticker: "MDB".into(),
            qty: 5,
            price: 250.25,
            date: DateTime::from_millis(1_698_335_223_434),
        },
    );
    same("date before 1970", &DateTime::from_millis(-1_500));
    same("object id", &oid);
    same("decimal", &"1.25".parse::<Decimal128>().unwrap());
    same(
        "timestamp",
        &Timestamp {
            time: 7,
            increment: 9,
        },
    );
    same(
        "generic binary",
        &Binary {
            subtype: BinarySubtype::Generic,
            bytes: vec![1, 2, 3],
        },
    );
    same(
        "other binary",
        &Binary {
            subtype: BinarySubtype::UserDefined(0x80),
            bytes: vec![1],
        },
    );
    same("uuid", &bson::Uuid::new());
    same(
        "regex",
        &Regex {
            pattern: "^a".into(),
            options: "i".into(),
        },
    );
    same(
        "raw document",
        &bson::RawDocumentBuf::from_document(&doc! {"a": 1}).unwrap(),
    );
    for value in [
        Bson::Double(f64::NAN),
        Bson::Double(-0.0),
        Bson::String("s".into()),
        Bson::Array(vec![Bson::Int32(1), Bson::Null]),
        Bson::Document(doc! {"a": {"b": 1}}),
        Bson::Boolean(true),
        Bson::Null,
        Bson::RegularExpression(Regex {
            pattern: "x".into(),
            options: String::new(),
        }),
        Bson::JavaScriptCode("f()".into()),
        Bson::JavaScriptCodeWithScope(bson::JavaScriptCodeWithScope {
            code: "g()".into(),
            scope: doc! {"x": 1},
        }),
        Bson::Int32(-3),
        Bson::Int64(i64::MIN),
        Bson::Timestamp(Timestamp {
            time: 1,
            increment: 2,
        }),
        Bson::Binary(Binary {
            subtype: BinarySubtype::Md5,
            bytes: vec![0; 16],
        }),
        Bson::ObjectId(oid),
        Bson::DateTime(DateTime::MAX),
        Bson::Symbol("sym".into()),
        Bson::Decimal128("-7E+3".parse().unwrap()),
        Bson::Undefined,
        Bson::MaxKey,
        Bson::MinKey,
    ] {
        same(&format!("{value:?}"), &value);
    }
}

#[test]
fn same_values_as_bson_for_serdes_data_model() {
    same(
        "integers",
        &(1_i8, 2_i16, 3_i32, 4_i64, 5_u8, 6_u16, 7_u32, 8_u64),
    );
    same("u64 past i64", &u64::MAX);
    same("i128", &1_i128);
    same("floats", &(1.5_f32, f64::INFINITY));
    same("char and str", &('é', "text"));
    same("bytes", &Bytes(b"abc"));
    same("options", &(None::<i32>, Some(3)));
    same("unit", &());
    same("unit struct", &Unit);
    same("newtype struct", &Wrapper(4));
    same("tuple struct", &Pair(1, "a".into()));
    same(
        "enums",
        &vec![Kind::Plain, Kind::New(2), Kind::Tuple(1, false)],
    );
    same("struct variant", &Kind::Fields { a: 1, b: None });
    same(
        "flatten and skip",
        &Outer {
            inner: Inner { x: 1 },
            skipped: None,
            one: Inner { x: 2 },
            two: (3, 4.5),
        },
    );
    same("empty map", &HashMap::<String, i32>::new());
    same("map", &BTreeMap::from([("a", 1), ("b", 2), ("c", 3)]));
    same("map, integer keys", &BTreeMap::from([(1, 1)]));
    same(
        "map of one struct",
        &BTreeMap::from([("k", Inner { x: 1 })]),
    );
    same("nested sequences", &vec![vec![1_u8], vec![]]);
    same(
        "json",
        &serde_json::json!({"a": [1, "x", null, {"b": 2.5}]}),
    );
}

#[test]
fn same_values_as_bson_for_dollar_fields() {
    let hex = "653a8f3e2b1c4d5e6f708192";
    same("$date of an i64", &Dollar { date: 5_i64 });
    same(
        "$date of a string",
        &Dollar {
            date: "2023-10-26T15:47:03Z",
        },
    );
    same("$date of a bad string", &Dollar { date: "yesterday" });
    same("$date of an i32", &Dollar { date: 5_i32 });
    same("$numberLong", &NumberLong { n: "12".into() });
    same(
        "$numberLong, not a number",
        &NumberLong { n: "twelve".into() },
    );
    // What a date's body looks like, and what only resembles it (`date::Body` reads the
    // first, hands the others to the general path).
    same(
        "$date of a $numberLong",
        &Dollar {
            date: NumberLong { n: "12".into() },
        },
    );
    for n in [
        "-1500",
        "007",
        "+5",
        "",
        "1.5",
        "99999999999999999999",
        "twelve",
    ] {
        same(
            &format!("$date of $numberLong {n:?}"),
            &Dollar {
                date: NumberLong { n: n.into() },
            },
        );
    }
    same(
        "$date of a $numberLong of an i64",
        &Dollar {
            date: doc! {"$numberLong": 12_i64},
        },
    );
    same(
        "$date of a $numberLong and more",
        &Dollar {
            date: doc! {"$numberLong": "12", "b": 1},
        },
    );
    same(
        "$date of a $oid",
        &Dollar {
            date: Oid { oid: hex.into() },
        },
    );
    same(
        "$date of a map",
        &Dollar {
            date: BTreeMap::from([("$numberLong", "12")]),
        },
    );
    #[derive(Serialize)]
    struct DateThenMore {
        #[serde(rename = "$date")]
        date: NumberLong,
        more: i32,
    }
    same(
        "$date of a $numberLong, then another field",
        &DateThenMore {
            date: NumberLong { n: "12".into() },
            more: 1,
        },
    );
    #[derive(Serialize)]
    struct MoreThenDate<T> {
        more: i32,
        #[serde(rename = "$date")]
        date: T,
    }
    same(
        "another field, then $date of a $numberLong",
        &MoreThenDate {
            more: 1,
            date: NumberLong { n: "12".into() },
        },
    );
    same(
        "another field, then $date of a date",
        &MoreThenDate {
            more: 1,
            date: DateTime::from_millis(7),
        },
    );
    #[derive(Serialize)]
    struct Empty {}
    same("$date of an empty struct", &Dollar { date: Empty {} });
    same("$oid", &Oid { oid: hex.into() });
    same("$oid, not an ObjectId", &Oid { oid: "nope".into() });
    for d in [
        doc! {"$date": 5_i64},
        doc! {"$numberLong": "12"},
        doc! {"$numberLong": "x"},
        doc! {"$oid": hex},
        doc! {"$oid": 1},
        doc! {"$numberDouble": "NaN"},
        doc! {"$symbol": "s"},
        doc! {"$code": "c", "$scope": {"a": 1}},
        doc! {"$timestamp": {"t": 1, "i": 2}},
        doc! {"$minKey": 1},
        doc! {"$maxKey": 2},
        doc! {"$undefined": true},
        doc! {"$binary": {"base64": "AQI=", "subType": "80"}},
        doc! {"$a": 1, "$b": 2},
        doc! {"$a": 1, "$b": 2, "$c": 3},
        doc! {"a": {"$date": 5_i64}},
        doc! {"a": {"$oid": hex}, "b": {"c": {"$numberLong": "3"}}},
        doc! {"a": 1, "b": 2, "c": {"$date": 1_i64}},
        doc! {"a": [{"$date": 5_i64}]},
    ] {
        same(&format!("{d}"), &d);
        same(
            &format!("{d} in a map"),
            &BTreeMap::from([("k", d.clone())]),
        );
        let as_map: BTreeMap<String, Bson> = d.clone().into_iter().collect();
        same(&format!("{d} as a map"), &as_map);
    }
    // An enum's newtype variant named like an Extended JSON key, inside a small document.
    #[derive(Serialize)]
    enum Odd {
        #[serde(rename = "$date")]
        Date(i64),
    }
    same(
        "variant named $date",
        &BTreeMap::from([("a", Odd::Date(5))]),
    );
    same("variant named $date, alone", &Odd::Date(5));
    let _: Document = Document::new();
}
