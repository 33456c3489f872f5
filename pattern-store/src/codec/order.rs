//! MongoDB's order of BSON values: the type brackets, then the values within a bracket
//! (numbers by exact value across Int32, Int64, Double and Decimal128). The in-memory store's
//! queries, sorts and indexes, the trees' node ids and the roll-ups' key merge all order by it,
//! as the server does.

use std::cmp::Ordering;

use bson::Bson;

/// MongoDB's canonical order of type brackets.
pub fn bracket(b: &Bson) -> u8 {
    match b {
        Bson::MinKey => 0,
        Bson::Null | Bson::Undefined => 1,
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => 2,
        Bson::String(_) | Bson::Symbol(_) => 3,
        Bson::Document(_) => 4,
        Bson::Array(_) => 5,
        Bson::Binary(_) => 6,
        Bson::ObjectId(_) => 7,
        Bson::Boolean(_) => 8,
        Bson::DateTime(_) => 9,
        Bson::Timestamp(_) => 10,
        Bson::RegularExpression(_) => 11,
        Bson::MaxKey => 13,
        _ => 12,
    }
}

/// A total order over BSON values (MongoDB's sort order for the types the patterns store).
pub fn compare_values(a: &Bson, b: &Bson) -> Ordering {
    let (ba, bb) = (bracket(a), bracket(b));
    if ba != bb {
        return ba.cmp(&bb);
    }
    match (a, b) {
        (Bson::Int32(x), Bson::Int32(y)) => x.cmp(y),
        (Bson::Int64(x), Bson::Int64(y)) => x.cmp(y),
        (Bson::Int32(x), Bson::Int64(y)) => (*x as i64).cmp(y),
        (Bson::Int64(x), Bson::Int32(y)) => x.cmp(&(*y as i64)),
        // Numbers by exact value across the four types, Decimal128 included (NaN first).
        (x, y) if ba == 2 => super::number::compare(x, y).unwrap_or(Ordering::Equal),
        (Bson::String(x), Bson::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Bson::ObjectId(x), Bson::ObjectId(y)) => x.bytes().cmp(&y.bytes()),
        (Bson::Boolean(x), Bson::Boolean(y)) => x.cmp(y),
        (Bson::DateTime(x), Bson::DateTime(y)) => x.cmp(y),
        (Bson::Timestamp(x), Bson::Timestamp(y)) => {
            (x.time, x.increment).cmp(&(y.time, y.increment))
        }
        (Bson::Document(x), Bson::Document(y)) => {
            for ((kx, vx), (ky, vy)) in x.iter().zip(y.iter()) {
                let o = compare_values(vx, vy).then_with(|| kx.cmp(ky));
                if o.is_ne() {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
        (Bson::Array(x), Bson::Array(y)) => {
            for (vx, vy) in x.iter().zip(y.iter()) {
                let o = compare_values(vx, vy);
                if o.is_ne() {
                    return o;
                }
            }
            x.len().cmp(&y.len())
        }
        (Bson::Binary(x), Bson::Binary(y)) => x.bytes.cmp(&y.bytes),
        _ => Ordering::Equal,
    }
}

/// Equality as `$eq` sees it (numbers compare by value across Int32/Int64/Double).
pub fn values_equal(a: &Bson, b: &Bson) -> bool {
    bracket(a) == bracket(b) && compare_values(a, b).is_eq()
}
