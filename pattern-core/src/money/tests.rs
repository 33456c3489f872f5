use bson::{doc, Bson, Decimal128};
use serde::{Deserialize, Serialize};

use super::*;

fn dec(s: &str) -> Decimal {
    parse_text(s).unwrap()
}

fn d128(s: &str) -> Decimal128 {
    s.parse().unwrap()
}

#[test]
fn decimal_to_decimal128_is_exact_and_keeps_places() {
    for s in [
        "19.99",
        "80.00",
        "-0.50",
        "0",
        "-0",
        "0.0000000000000000000000000001",
        "79228162514264337593543950335",
        "-7.9228162514264337593543950335",
        "9007199254740993",
    ] {
        let d = dec(s);
        let x = to_decimal128(&d);
        assert_eq!(x, d128(s), "{s}");
        let back = from_decimal128(&x).unwrap();
        assert_eq!(back.to_string(), d.to_string(), "{s}");
        assert_eq!((back.mantissa(), back.scale()), (d.mantissa(), d.scale()));
        assert_eq!(back.is_sign_negative(), d.is_sign_negative(), "{s}");
    }
    assert_eq!(
        to_decimal128(&Decimal::MAX).to_string(),
        "79228162514264337593543950335"
    );
}

#[test]
fn decimal128_that_does_not_fit_is_refused() {
    let ok = |s: &str| from_decimal128(&d128(s)).map(|d| d.to_string());
    // Trailing zeros are dropped only as needed; exponents are expanded.
    assert_eq!(
        ok("1.0000000000000000000000000000000000").unwrap(),
        "1.0000000000000000000000000000"
    );
    assert_eq!(ok("1.5E+3").unwrap(), "1500");
    assert_eq!(ok("0E+6000").unwrap(), "0");
    assert_eq!(ok("0E-6176").unwrap(), "0.0000000000000000000000000000");
    assert_eq!(ok("1E+28").unwrap(), "10000000000000000000000000000");
    assert!(matches!(ok("1E+29"), Err(MoneyError::OutOfRange { .. })));
    assert!(matches!(ok("1E-29"), Err(MoneyError::TooManyPlaces { .. })));
    assert!(matches!(
        ok("0.12345678901234567890123456789"),
        Err(MoneyError::TooManyPlaces { .. })
    ));
    assert!(matches!(
        ok("79228162514264337593543950336"),
        Err(MoneyError::OutOfRange { .. })
    ));
    for s in ["NaN", "-NaN", "Infinity", "-Infinity"] {
        assert!(matches!(ok(s), Err(MoneyError::NotFinite { .. })), "{s}");
    }
}

#[test]
fn scaled_longs_are_exact_at_any_magnitude() {
    assert_eq!(from_scaled(1999, 2).unwrap().to_string(), "19.99");
    assert_eq!(from_scaled(8000, 2).unwrap().to_string(), "80.00");
    assert_eq!(from_scaled(9990, 3).unwrap().to_string(), "9.990");
    assert_eq!(from_scaled(-5, 2).unwrap().to_string(), "-0.05");
    assert_eq!(from_scaled(0, 2).unwrap().to_string(), "0.00");
    // f64 would round these: 2^53 + 1 and i64's ends.
    assert_eq!(
        from_scaled(9_007_199_254_740_993, 2).unwrap().to_string(),
        "90071992547409.93"
    );
    assert_eq!(
        (9_007_199_254_740_993_f64 / 100.0).to_string(),
        "90071992547409.92"
    );
    assert_eq!(
        from_scaled(i64::MAX, 2).unwrap().to_string(),
        "92233720368547758.07"
    );
    assert_eq!(
        from_scaled(i64::MIN, 2).unwrap().to_string(),
        "-92233720368547758.08"
    );
    assert_eq!(
        from_scaled(i64::MAX, 28).unwrap().to_string(),
        "0.0000000009223372036854775807"
    );
    assert_eq!(from_scaled(1, 29), Err(MoneyError::Scale(29)));
    // And back.
    for n in [1999, 0, -1, i64::MAX, i64::MIN, 9_007_199_254_740_993] {
        assert_eq!(to_scaled(&from_scaled(n, 2).unwrap(), 2), Ok(n));
    }
    assert_eq!(to_scaled(&dec("19.99"), 3), Ok(19990));
    assert_eq!(to_scaled(&dec("19.990"), 2), Ok(1999));
    assert!(matches!(
        to_scaled(&dec("19.999"), 2),
        Err(MoneyError::TooManyPlaces { scale: 2, .. })
    ));
    assert!(matches!(
        to_scaled(&dec("92233720368547758.08"), 2),
        Err(MoneyError::OutOfRange { .. })
    ));
    assert!(matches!(
        to_scaled(&Decimal::MAX, 28),
        Err(MoneyError::OutOfRange { .. })
    ));
}

#[test]
fn display_strings_are_read_strictly() {
    for (s, want) in [
        ("24.95", "24.95"),
        ("80.00", "80.00"),
        ("-0.5", "-0.5"),
        ("+3", "3"),
        ("007.10", "7.10"),
        (
            "0.0000000000000000000000000001",
            "0.0000000000000000000000000001",
        ),
    ] {
        assert_eq!(parse_text(s).unwrap().to_string(), want, "{s}");
    }
    let reason = |s: &str| match parse_text(s) {
        Err(MoneyError::Syntax { reason, .. }) => reason,
        other => panic!("{s}: {other:?}"),
    };
    assert_eq!(reason(" 24.95"), "spaces");
    assert_eq!(reason("24.95 "), "spaces");
    assert_eq!(reason("2 4"), "spaces");
    assert_eq!(reason("1e3"), "an exponent is not a display form");
    assert_eq!(reason("2.5E-1"), "an exponent is not a display form");
    assert_eq!(reason(""), "empty");
    for s in [
        "abc", "1,000", "1_000", ".5", "5.", "-", "--1", "NaN", "Infinity", "$5", "1.2.3", "٣",
    ] {
        assert_eq!(reason(s), "not [+-]digits[.digits]", "{s}");
    }
    assert!(matches!(
        parse_text("0.12345678901234567890123456789"),
        Err(MoneyError::TooManyPlaces { .. })
    ));
    assert!(matches!(
        parse_text("79228162514264337593543950336"),
        Err(MoneyError::OutOfRange { .. })
    ));
    // 0.1 + 0.2 is 0.3: Decimal arithmetic, never f64.
    assert_eq!(dec("0.1") + dec("0.2"), dec("0.3"));
    assert_ne!(0.1_f64 + 0.2, 0.3);
}

#[test]
fn forms_read_their_types_only() {
    let read = |f: Form, v: Bson| f.read(&v).map(|d| d.to_string());
    assert_eq!(read(Form::Scaled(2), Bson::Int64(1999)).unwrap(), "19.99");
    assert_eq!(read(Form::Scaled(2), Bson::Int32(2495)).unwrap(), "24.95");
    // The legacy shell's numbers are doubles: integral ones up to 2^53 are exact.
    assert_eq!(
        read(Form::Scaled(2), Bson::Double(1999.0)).unwrap(),
        "19.99"
    );
    assert_eq!(
        read(Form::Scaled(0), Bson::Double(9007199254740992.0)).unwrap(),
        "9007199254740992"
    );
    for v in [
        Bson::Double(19.99),
        Bson::Double(9007199254740994.0),
        Bson::Double(f64::NAN),
    ] {
        assert!(
            matches!(Form::Scaled(2).read(&v), Err(MoneyError::WrongType { .. })),
            "{v}"
        );
    }
    assert_eq!(
        Form::Scaled(2)
            .read(&Bson::Double(19.99))
            .unwrap_err()
            .to_string(),
        "a BSON double (19.99) is not an amount scaled by 10^2"
    );
    assert_eq!(
        read(Form::Text, Bson::String("24.95".into())).unwrap(),
        "24.95"
    );
    assert!(Form::Text.read(&Bson::Int64(1)).is_err());
    assert!(Form::Scaled(2).read(&Bson::String("1".into())).is_err());
    assert!(Form::Decimal128.read(&Bson::Double(1.0)).is_err());
    assert!(Form::Scaled(2).read(&Bson::Null).is_err());
    assert_eq!(
        read(Form::Decimal128, Bson::Decimal128(d128("2.099"))).unwrap(),
        "2.099"
    );
    // Writing.
    assert_eq!(Form::Scaled(3).write(&dec("9.99")), Ok(Bson::Int64(9990)));
    assert_eq!(
        Form::Text.write(&dec("80.00")),
        Ok(Bson::String("80.00".into()))
    );
    assert_eq!(
        Form::Decimal128.write(&dec("80.00")),
        Ok(Bson::Decimal128(d128("80.00")))
    );
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Garment {
    #[serde(with = "decimal128")]
    price: Decimal,
    #[serde(default, with = "decimal128::option")]
    sale: Option<Decimal>,
    #[serde(with = "text")]
    display: Decimal,
    #[serde(
        serialize_with = "scaled::serialize::<2, _>",
        deserialize_with = "scaled::deserialize::<2, _>"
    )]
    cents: Decimal,
    mills: Scaled<3>,
    #[serde(
        serialize_with = "decimal128::serialize",
        deserialize_with = "any_form::deserialize::<2, _>"
    )]
    any: Decimal,
}

fn garment() -> Garment {
    Garment {
        price: dec("19.99"),
        sale: Some(dec("-0.00")),
        display: dec("24.95"),
        cents: dec("39.99"),
        mills: Scaled(dec("9.99")),
        any: dec("80.00"),
    }
}

#[test]
fn adapters_round_trip_through_every_serializer() {
    let g = garment();
    let want = doc! {
        "price": Bson::Decimal128(d128("19.99")),
        "sale": Bson::Decimal128(d128("-0.00")),
        "display": "24.95",
        "cents": 3999_i64,
        "mills": 9990_i64,
        "any": Bson::Decimal128(d128("80.00")),
    };
    // bson's serializer and the library's own.
    assert_eq!(bson::to_document(&g).unwrap(), want);
    assert_eq!(
        crate::codec::ser::to_bson(&g).unwrap(),
        Bson::Document(want.clone())
    );
    // bson's deserializers: from a Document and from bytes.
    let back: Garment = bson::from_document(want.clone()).unwrap();
    assert_eq!(back, g);
    assert!(back.sale.unwrap().is_sign_negative());
    let bytes = bson::to_vec(&want).unwrap();
    assert_eq!(bson::from_slice::<Garment>(&bytes).unwrap(), g);
    // Extended JSON (serde_json): Decimal128 as {"$numberDecimal": "..."}.
    let json = serde_json::to_value(&g).unwrap();
    assert_eq!(
        json["price"],
        serde_json::json!({"$numberDecimal": "19.99"})
    );
    assert_eq!(serde_json::from_value::<Garment>(json).unwrap(), g);
    // A missing or null Option reads as None.
    let mut none = want.clone();
    none.remove("sale");
    assert_eq!(
        bson::from_document::<Garment>(none.clone()).unwrap().sale,
        None
    );
    none.insert("sale", Bson::Null);
    assert_eq!(bson::from_document::<Garment>(none).unwrap().sale, None);
}

#[test]
fn any_form_reads_each_form() {
    for (v, want) in [
        (Bson::Int64(1999), "19.99"),
        (Bson::Int32(8000), "80.00"),
        (Bson::String("24.95".into()), "24.95"),
        (Bson::Decimal128(d128("29.99")), "29.99"),
    ] {
        let mut d = bson::to_document(&garment()).unwrap();
        d.insert("any", v.clone());
        let g: Garment = bson::from_document(d).unwrap();
        assert_eq!(g.any.to_string(), want, "{v}");
        // and writes it back as Decimal128
        assert_eq!(
            bson::to_document(&g).unwrap().get("any"),
            Some(&Bson::Decimal128(d128(want)))
        );
        let w: AnyForm<2> = bson::from_bson(v).unwrap();
        assert_eq!(w.to_string(), want);
    }
}

#[test]
fn refusals_are_deserialization_errors() {
    let with = |field: &str, v: Bson| {
        let mut d = bson::to_document(&garment()).unwrap();
        d.insert(field, v);
        bson::from_document::<Garment>(d).unwrap_err().to_string()
    };
    assert!(with("price", Bson::Decimal128(d128("NaN"))).contains("NaN is not an amount"));
    assert!(with("price", Bson::Decimal128(d128("1E-30"))).contains("more decimal places"));
    assert!(with("price", Bson::Double(19.99)).contains("is not a Decimal128 amount"));
    assert!(with("display", Bson::String("1e3".into())).contains("exponent"));
    assert!(with("cents", Bson::Double(19.99)).contains("scaled"));
    assert!(with("mills", Bson::String("9.99".into())).contains("scaled"));
    assert!(with("any", Bson::Boolean(true)).contains("scaled"));
    // Writing refuses what would round.
    let mut g = garment();
    g.cents = dec("19.999");
    assert!(bson::to_document(&g)
        .unwrap_err()
        .to_string()
        .contains("rounded"));
    g.cents = dec("19.99");
    g.mills = Scaled(Decimal::MAX);
    assert!(bson::to_document(&g)
        .unwrap_err()
        .to_string()
        .contains("Int64"));
}
