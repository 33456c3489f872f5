//! MongoDB's arithmetic on BSON numbers, for the per-bucket summaries: `$inc` / `$sum` addition
//! with its type promotions, and the numeric order behind `$min` / `$max`. Decimal128 is computed
//! here exactly (IEEE 754-2008, BID encoding): the bson crate only stores and prints it.
#![allow(dead_code)]

use std::cmp::Ordering;

use bson::{spec::ElementType, Bson, Decimal128};

/// Why a sum could not be computed.
#[derive(Debug, Clone, PartialEq)]
pub enum NumberError {
    /// The sum does not fit its type: an Int64 sum past i64 (MongoDB refuses such an `$inc`), or
    /// a Decimal128 sum of finite operands that rounds to infinity.
    Overflow,
    /// An operand is not a number: its BSON type.
    NotANumber(ElementType),
}

/// Decimal128 coefficients are below 10^34 (34 digits).
const COEF_END: u128 = 10u128.pow(34);
/// The exponent's bias in the encoding, and the exponent range.
const BIAS: i32 = 6176;
const EXP_MIN: i32 = -6176;
const EXP_MAX: i32 = 6111;
/// The canonical quiet NaN (positive, payload 0).
const QNAN: u128 = 0b11111 << 122;

/// A Decimal128 decoded.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Dec {
    /// A NaN, its encoding kept so that it propagates (sign and payload).
    NaN(u128),
    /// An infinity: negative?
    Inf(bool),
    /// A finite value `(-1)^negative * coefficient * 10^exponent`.
    Fin(bool, u128, i32),
}

/// Decodes the BID encoding (both coefficient forms; a non-canonical coefficient reads as 0).
fn decode(d: &Decimal128) -> Dec {
    let bits = u128::from_le_bytes(d.bytes());
    let neg = bits >> 127 == 1;
    let (coef, biased) = match (bits >> 122) & 0b11111 {
        0b11111 => return Dec::NaN(bits),
        0b11110 => return Dec::Inf(neg),
        // `11` then the exponent in bits 124..111: an implied `100` before the low 111 bits,
        // always >= 2^113 > 10^34, so never canonical.
        g if g >> 3 == 0b11 => (
            (0b100 << 111) | (bits & ((1 << 111) - 1)),
            (bits >> 111) & 0x3fff,
        ),
        _ => (bits & ((1 << 113) - 1), (bits >> 113) & 0x3fff),
    };
    let coef = if coef < COEF_END { coef } else { 0 };
    Dec::Fin(neg, coef, biased as i32 - BIAS)
}

/// Encodes canonically; a NaN is made quiet (bit 121 cleared).
fn encode(d: Dec) -> Decimal128 {
    let bits = match d {
        Dec::NaN(bits) => bits & !(1 << 121),
        Dec::Inf(neg) => (neg as u128) << 127 | 0b11110 << 122,
        Dec::Fin(neg, c, e) => {
            debug_assert!(c < COEF_END && (EXP_MIN..=EXP_MAX).contains(&e), "{c}E{e}");
            (neg as u128) << 127 | ((e + BIAS) as u128) << 113 | c
        }
    };
    Decimal128::from_bytes(bits.to_le_bytes())
}

/// A finite Decimal128 as (negative, coefficient < 10^34, exponent); `None` for NaN and
/// infinities. Non-canonical coefficients (>= 10^34, in either BID form) read as 0, as in IEEE.
pub fn decimal_parts(d: &Decimal128) -> Option<(bool, u128, i32)> {
    match decode(d) {
        Dec::Fin(neg, c, e) => Some((neg, c, e)),
        _ => None,
    }
}

/// Whether `v` is a NaN, double or decimal.
pub fn is_nan(v: &Bson) -> bool {
    match v {
        Bson::Double(x) => x.is_nan(),
        Bson::Decimal128(d) => matches!(decode(d), Dec::NaN(_)),
        _ => false,
    }
}

/// The canonical Decimal128 `(-1)^negative * coefficient * 10^exponent`; the coefficient must be
/// below 10^34 and the exponent within -6176..=6111 (checked in debug builds).
pub fn decimal_from_parts(negative: bool, coefficient: u128, exponent: i32) -> Decimal128 {
    encode(Dec::Fin(negative, coefficient, exponent))
}

/// 10^k, `k <= 38`.
fn pow10(k: usize) -> u128 {
    10u128.pow(k as u32)
}

/// The number of decimal digits of `c` (0 for 0).
fn digits(c: u128) -> usize {
    c.checked_ilog10().map_or(0, |l| l as usize + 1)
}

/// `c / 10^k` rounded half-even, `1 <= k <= 38`.
fn round_div(c: u128, k: usize) -> u128 {
    let (q, r, half) = (c / pow10(k), c % pow10(k), 5 * pow10(k - 1));
    q + u128::from(r > half || (r == half && q % 2 == 1))
}

/// The significant digits (the decimal point dropped) and decimal exponent of `x`'s scientific
/// notation with `precision` digits after the point, correctly rounded half-even (std's exact
/// float formatting).
fn scientific(x: f64, precision: usize) -> (String, i32) {
    let s = format!("{x:.precision$e}");
    let (mantissa, exp) = s.split_once('e').expect("`e` format");
    (mantissa.replace('.', ""), exp.parse().expect("exponent"))
}

/// A double as MongoDB converts it for decimal arithmetic (`Decimal128(double)` with its default
/// `kRoundTo15Digits`): converted to 34 digits (`binary64_to_bid128`, half-even), then rounded
/// half-even to exactly 15 significant digits, trailing zeros kept: 0.1 -> 0.100000000000000,
/// 1.0 -> 1.00000000000000, 0.9999999999999994 -> 0.999999999999999. Zeros keep their sign at
/// exponent 0; NaN becomes the quiet NaN, infinities stay.
fn dec_from_f64(x: f64) -> Dec {
    if x.is_nan() {
        return Dec::NaN(QNAN);
    }
    if x.is_infinite() {
        return Dec::Inf(x < 0.0);
    }
    if x == 0.0 {
        return Dec::Fin(x.is_sign_negative(), 0, 0);
    }
    let (digits34, e10) = scientific(x.abs(), 33);
    let mut c = round_div(digits34.parse().expect("34 digits"), 19);
    let mut e = e10 - 14;
    if c == pow10(15) {
        (c, e) = (pow10(14), e + 1);
    }
    Dec::Fin(x < 0.0, c, e)
}

/// A number as a decimal (ints exactly, doubles as [`dec_from_f64`]); an error for non-numbers.
fn to_dec(v: &Bson) -> Result<Dec, NumberError> {
    Ok(match v {
        Bson::Int32(x) => Dec::Fin(*x < 0, x.unsigned_abs().into(), 0),
        Bson::Int64(x) => Dec::Fin(*x < 0, x.unsigned_abs().into(), 0),
        Bson::Double(x) => dec_from_f64(*x),
        Bson::Decimal128(d) => decode(d),
        _ => return Err(NumberError::NotANumber(v.element_type())),
    })
}

/// `a + b` with MongoDB's `$inc` / `$sum` type rules:
/// - Int32 + Int32 -> Int32, or Int64 when the sum leaves i32;
/// - Int32 / Int64 mixes -> Int64; a sum past i64 is `Err(Overflow)` (never wrapped);
/// - Double with Int32 / Int64 / Double -> Double (f64 addition: NaN and infinities as f64);
/// - anything with Decimal128 -> Decimal128, computed exactly as IEEE 754-2008 decimal128
///   addition: the exact sum when it fits 34 digits (at the smaller exponent, as IEEE prefers),
///   else rounded half-even to 34 digits; a finite sum rounding to infinity is `Err(Overflow)`;
///   NaN and infinities propagate as IEEE (Inf + -Inf is NaN). Ints convert exactly, doubles to
///   15 significant digits as MongoDB does (see `dec_from_f64`): Double(0.1) + Decimal 0 is
///   0.100000000000000.
///
/// A non-number operand is `Err(NotANumber(its type))`.
pub fn add(a: &Bson, b: &Bson) -> Result<Bson, NumberError> {
    use Bson::{Decimal128 as D, Double, Int32, Int64};
    Ok(match (a, b) {
        (Int32(x), Int32(y)) => x
            .checked_add(*y)
            .map_or(Int64(*x as i64 + *y as i64), Int32),
        (Int32(_) | Int64(_), Int32(_) | Int64(_)) => {
            Int64(int(a).checked_add(int(b)).ok_or(NumberError::Overflow)?)
        }
        (Int32(_) | Int64(_) | Double(_), Int32(_) | Int64(_) | Double(_)) => {
            Double(float(a) + float(b))
        }
        // A Decimal128 and a number, or a non-number, which `to_dec` refuses.
        _ => D(encode(add_dec(to_dec(a)?, to_dec(b)?)?)),
    })
}

/// The sum of `values` as one exact result, whatever their order: integers added exactly
/// ([`add`]; past i64, `Err(Overflow)`), anything with a Decimal128 as [`add`] folds it
/// (Decimal128 sums are exact), and a sum holding a Double as the correctly rounded value of
/// the exact real sum of all the values as doubles ([`fsum`]), where [`add`] folded one by one
/// would depend on the order and lose what cancels (1e20 + 1 - 1e20 is 0 in order, 1 exactly).
pub fn sum(values: &[&Bson]) -> Result<Bson, NumberError> {
    let has = |f: fn(&Bson) -> bool| values.iter().any(|v| f(v));
    if has(|v| matches!(v, Bson::Double(_)))
        && !has(|v| !matches!(v, Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_)))
    {
        return Ok(Bson::Double(fsum(values.iter().map(|v| float(v)))));
    }
    values
        .iter()
        .try_fold(Bson::Int32(0), |acc, v| add(&acc, v))
}

/// The correctly rounded sum of `values` (Shewchuk's exact partials, rounded half-even at
/// the end, as Python's `math.fsum`): independent of the order. Infinities and NaN, or an
/// intermediate overflow, give the plain sum (IEEE's infinity or NaN).
pub fn fsum(values: impl Iterator<Item = f64> + Clone) -> f64 {
    let plain = || values.clone().fold(0.0, |a, b| a + b);
    let mut partials: Vec<f64> = Vec::new();
    for mut x in values.clone() {
        if !x.is_finite() {
            return plain();
        }
        let mut i = 0;
        for j in 0..partials.len() {
            let mut y = partials[j];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            let lo = y - (hi - x);
            if lo != 0.0 {
                partials[i] = lo;
                i += 1;
            }
            x = hi;
        }
        if !x.is_finite() {
            return plain();
        }
        partials.truncate(i);
        partials.push(x);
    }
    let Some(mut hi) = partials.pop() else {
        return 0.0;
    };
    let mut lo = 0.0;
    while let Some(y) = partials.pop() {
        let x = hi;
        hi = x + y;
        lo = y - (hi - x);
        if lo != 0.0 {
            break;
        }
    }
    // Half-even: when the rest below `lo` has its sign, `hi + lo` rounded the other way.
    if let Some(&next) = partials.last() {
        if (lo < 0.0 && next < 0.0) || (lo > 0.0 && next > 0.0) {
            let y = lo * 2.0;
            let x = hi + y;
            if y == x - hi {
                hi = x;
            }
        }
    }
    hi
}

/// An Int32 / Int64 as i64 (0 for anything else: callers match first).
fn int(v: &Bson) -> i64 {
    match v {
        Bson::Int32(x) => (*x).into(),
        Bson::Int64(x) => *x,
        _ => 0,
    }
}

/// An Int32 / Int64 / Double as f64, as MongoDB converts it (`as`: nearest).
/// An Int32, Int64 or Double as a double (anything else: NaN).
pub fn as_f64(v: &Bson) -> f64 {
    match v {
        Bson::Int32(x) => f64::from(*x),
        Bson::Int64(x) => *x as f64,
        Bson::Double(x) => *x,
        _ => f64::NAN,
    }
}

fn float(v: &Bson) -> f64 {
    match v {
        Bson::Double(x) => *x,
        _ => int(v) as f64,
    }
}

/// IEEE decimal128 addition of two decoded values (see [`add`]).
fn add_dec(x: Dec, y: Dec) -> Result<Dec, NumberError> {
    use Dec::{Fin, Inf, NaN};
    let ((an, ac, ae), (bn, bc, be)) = match (x, y) {
        (NaN(n), _) | (_, NaN(n)) => return Ok(NaN(n)),
        (Inf(p), Inf(q)) if p != q => return Ok(NaN(QNAN)),
        (Inf(p), _) | (_, Inf(p)) => return Ok(Inf(p)),
        // `a` the operand with the larger exponent.
        (Fin(xn, xc, xe), Fin(yn, yc, ye)) if xe >= ye => ((xn, xc, xe), (yn, yc, ye)),
        (Fin(xn, xc, xe), Fin(yn, yc, ye)) => ((yn, yc, ye), (xn, xc, xe)),
    };
    if ac == 0 {
        // Exact, at the smaller exponent; -0 + -0 is -0, any other zero sum +0.
        return Ok(Fin(if bc == 0 { an && bn } else { bn }, bc, be));
    }
    // Work in units of 10^w: b exactly when a, aligned to b, has at most 37 digits; else a's 37
    // leading digits (exact: a's digits stop above) and b's digits down to that unit, any lower
    // ones as a sticky digit (a trailing 1 one unit further down). The 34-digit result's
    // rounding points (multiples of half its last digit, >= 50 units) and the decades are whole
    // units, and the exact and sticky sums lie strictly between the same two units, so they
    // round alike (the sum has >= 36 digits then; a 37-digit a, times 10, fits the u128).
    let mut w = be.max(ae + digits(ac) as i32 - 37);
    let mut big = ac * pow10((ae - w) as usize);
    let drop = (w - be) as usize;
    let (mut small, sticky) = match drop {
        0 => (bc, false),
        1..=34 => (bc / pow10(drop), bc % pow10(drop) != 0),
        _ => (0, bc != 0),
    };
    if sticky {
        (big, small, w) = (big * 10, small * 10 + 1, w - 1);
    }
    let (neg, coef) = match (an == bn, big >= small) {
        (true, _) => (an, big + small),
        (false, true) => (an, big - small),
        (false, false) => (bn, small - big),
    };
    if coef == 0 {
        return Ok(Fin(false, 0, w)); // exact cancellation: +0 (rounding half-even)
    }
    let n = digits(coef);
    if n <= 34 {
        return Ok(Fin(neg, coef, w)); // exact; w is b's exponent here, in range
    }
    let (mut c, mut e) = (round_div(coef, n - 34), w + (n - 34) as i32);
    if c == COEF_END {
        (c, e) = (pow10(33), e + 1);
    }
    if e > EXP_MAX {
        return Err(NumberError::Overflow);
    }
    Ok(Fin(neg, c, e))
}

/// MongoDB's order of numbers across Int32 / Int64 / Double / Decimal128, exactly: i64 against
/// f64 without precision loss, Decimal128 against ints, doubles and decimals by exact value
/// (1.0 equals Int32 1; -0 equals 0). NaN (double or decimal) sorts below every other number,
/// -Infinity included, and equals NaN. `None` when either is not a number.
pub fn compare(a: &Bson, b: &Bson) -> Option<Ordering> {
    use Bson::{Decimal128 as D, Double, Int32, Int64};
    Some(match (a, b) {
        (Int32(_) | Int64(_), Int32(_) | Int64(_)) => int(a).cmp(&int(b)),
        (Double(x), Double(y)) => rank_f64(*x)
            .cmp(&rank_f64(*y))
            .then_with(|| x.partial_cmp(y).unwrap_or(Ordering::Equal)),
        (Int32(_) | Int64(_), Double(y)) => cmp_i64_f64(int(a), *y),
        (Double(x), Int32(_) | Int64(_)) => cmp_i64_f64(int(b), *x).reverse(),
        (D(d), Double(y)) => cmp_dec_f64(decode(d), *y),
        (Double(x), D(d)) => cmp_dec_f64(decode(d), *x).reverse(),
        (D(d), _) => cmp_decs(decode(d), to_dec(b).ok()?),
        (_, D(d)) => cmp_decs(to_dec(a).ok()?, decode(d)),
        _ => return None,
    })
}

/// Order classes: NaN 0, -Infinity 1, finite 2, +Infinity 3 (NaN fails every comparison).
fn rank_f64(x: f64) -> u8 {
    u8::from(!x.is_nan()) + u8::from(x > f64::NEG_INFINITY) + u8::from(x == f64::INFINITY)
}

/// [`rank_f64`] for a decimal.
fn rank_dec(d: &Dec) -> u8 {
    match d {
        Dec::NaN(_) => 0,
        Dec::Inf(true) => 1,
        Dec::Fin(..) => 2,
        Dec::Inf(false) => 3,
    }
}

/// An i64 against an f64, exactly.
fn cmp_i64_f64(i: i64, x: f64) -> Ordering {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if x.is_nan() || x < -TWO_63 {
        Ordering::Greater
    } else if x >= TWO_63 {
        Ordering::Less
    } else {
        // -2^63 <= x < 2^63: its integral part is an exact i64.
        i.cmp(&(x.trunc() as i64))
            .then(0f64.partial_cmp(&x.fract()).expect("finite"))
    }
}

/// -1, 0 or 1.
fn signum(neg: bool, nonzero: bool) -> i8 {
    i8::from(nonzero) * if neg { -1 } else { 1 }
}

/// Two numbers of signs `s` and `t` in order, `magnitudes` ordering their absolute values.
fn by_sign(s: i8, t: i8, magnitudes: impl FnOnce() -> Ordering) -> Ordering {
    match (s.cmp(&t), s) {
        (Ordering::Equal, 1) => magnitudes(),
        (Ordering::Equal, -1) => magnitudes().reverse(),
        (order, _) => order,
    }
}

/// Two decimals by value.
fn cmp_decs(x: Dec, y: Dec) -> Ordering {
    let (Dec::Fin(xn, xc, xe), Dec::Fin(yn, yc, ye)) = (x, y) else {
        return rank_dec(&x).cmp(&rank_dec(&y));
    };
    by_sign(signum(xn, xc != 0), signum(yn, yc != 0), || {
        // The leading digit's place, then the coefficients padded to 34 digits.
        let (nx, ny) = (digits(xc), digits(yc));
        (xe + nx as i32)
            .cmp(&(ye + ny as i32))
            .then_with(|| (xc * pow10(34 - nx)).cmp(&(yc * pow10(34 - ny))))
    })
}

/// A decimal against a double, exactly.
fn cmp_dec_f64(d: Dec, x: f64) -> Ordering {
    let (Dec::Fin(neg, c, e), true) = (d, x.is_finite()) else {
        return rank_dec(&d).cmp(&rank_f64(x));
    };
    by_sign(signum(neg, c != 0), signum(x < 0.0, x != 0.0), || {
        // Parsing rounds correctly, hence monotonically: a nearest double other than |x| decides.
        let near: f64 = format!("{c}e{e}").parse().expect("float");
        near.partial_cmp(&x.abs()).expect("not NaN").then_with(|| {
            // Else the exact digits (a double has at most 767 significant digits).
            let (xd, xe) = scientific(x.abs(), 800);
            let cd = c.to_string();
            (e + cd.len() as i32 - 1)
                .cmp(&xe)
                .then_with(|| cd.trim_end_matches('0').cmp(xd.trim_end_matches('0')))
        })
    })
}

/// The one number MongoDB's equality sees in `v`, for keying a map or a set by value: two
/// numbers are equal (Int32 5, Int64 5, Double 5.0, Decimal128 5.00) exactly when their canonical
/// forms are the same BSON value, bytes included. An integer within i64 (whatever its type) is an
/// Int64; any other double is itself (-0 is 0; every NaN one NaN, a decimal's too; infinities
/// doubles); a decimal a double holds exactly is that double; any other decimal has no trailing
/// zeros in its coefficient. `None` when `v` is not a number.
pub fn canonical(v: &Bson) -> Option<Bson> {
    Some(match v {
        Bson::Int32(x) => Bson::Int64((*x).into()),
        Bson::Int64(x) => Bson::Int64(*x),
        Bson::Double(x) => canonical_f64(*x),
        Bson::Decimal128(d) => match decode(d) {
            Dec::NaN(_) => Bson::Double(f64::NAN),
            Dec::Inf(neg) => Bson::Double(if neg {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }),
            Dec::Fin(neg, c, e) => canonical_dec(neg, c, e),
        },
        _ => return None,
    })
}

/// [`canonical`] of a double.
fn canonical_f64(x: f64) -> Bson {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if x.is_nan() {
        Bson::Double(f64::NAN)
    } else if x.fract() == 0.0 && (-TWO_63..TWO_63).contains(&x) {
        // Integral and within i64: exact (-0 becomes 0).
        Bson::Int64(x as i64)
    } else {
        Bson::Double(x)
    }
}

/// [`canonical`] of a finite decimal `(-1)^neg * c * 10^e`.
fn canonical_dec(neg: bool, mut c: u128, mut e: i32) -> Bson {
    if c == 0 {
        return Bson::Int64(0);
    }
    // The largest exponent that keeps the coefficient whole: one form per value.
    while c.is_multiple_of(10) && e < EXP_MAX {
        (c, e) = (c / 10, e + 1);
    }
    if (0..=18).contains(&e) {
        let whole = (c.checked_mul(pow10(e as usize)))
            .and_then(|m| i128::try_from(m).ok())
            .map(|m| if neg { -m } else { m })
            .and_then(|m| i64::try_from(m).ok());
        if let Some(n) = whole {
            return Bson::Int64(n);
        }
    }
    let sign = if neg { "-" } else { "" };
    let near: f64 = format!("{sign}{c}e{e}").parse().expect("float");
    if near.is_finite() && cmp_dec_f64(Dec::Fin(neg, c, e), near) == Ordering::Equal {
        return canonical_f64(near);
    }
    Bson::Decimal128(encode(Dec::Fin(neg, c, e)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Bson::{Decimal128 as D, Double, Int32, Int64};

    fn d(s: &str) -> Bson {
        D(s.parse().unwrap())
    }

    #[test]
    fn type_rules() {
        let err = |t| Err(NumberError::NotANumber(t));
        let cases = [
            (Int32(1), Int32(2), Ok(Int32(3))),
            (Int32(1), Int64(2), Ok(Int64(3))),
            (Double(0.25), Int64(2), Ok(Double(2.25))),
            (Double(0.25), Double(0.5), Ok(Double(0.75))),
            (Int32(7), d("0.5"), Ok(d("7.5"))),
            (d("1.5"), Int64(-3), Ok(d("-1.5"))),
            // Doubles become 15 significant digits, as in MongoDB.
            (d("0.2"), Double(0.1), Ok(d("0.300000000000000"))),
            (Double(-0.0), d("-0"), Ok(d("-0"))),
            (Double(f64::INFINITY), d("1"), Ok(d("Infinity"))),
            // Overflows: i32 promotes, i64 is refused, decimals are exact.
            (Int32(i32::MAX), Int32(1), Ok(Int64(1 << 31))),
            (Int32(i32::MIN), Int32(-1), Ok(Int64(-(1 << 31) - 1))),
            (Int64(i64::MAX), Int32(1), Err(NumberError::Overflow)),
            (Int64(i64::MIN), Int64(-1), Err(NumberError::Overflow)),
            (Int64(i64::MAX), Int64(i64::MIN), Ok(Int64(-1))),
            (Int64(i64::MAX), d("1"), Ok(d("9223372036854775808"))),
            (Int32(1), Bson::String("x".into()), err(ElementType::String)),
            (Bson::Null, d("1"), err(ElementType::Null)),
            (d("1"), Bson::Boolean(true), err(ElementType::Boolean)),
        ];
        for (a, b, want) in cases {
            assert_eq!(add(&a, &b), want, "{a} + {b}");
        }
        assert!(matches!(add(&Double(f64::NAN), &Int32(1)), Ok(Double(x)) if x.is_nan()));
        for (x, want) in [
            (0.1, "0.100000000000000"),
            (1.0, "1.00000000000000"),
            (0.9999999999999994, "0.999999999999999"),
            (123_456_789.123_456_79, "123456789.123457"),
            (-2.5e-300, "-2.50000000000000E-300"),
            (f64::MAX, "1.79769313486232E+308"),
        ] {
            assert_eq!(encode(dec_from_f64(x)).to_string(), want);
        }
    }

    #[test]
    fn decimal_sums() {
        let nines = "9999999999999999999999999999999999";
        let max = "9.999999999999999999999999999999999E+6144";
        let e34 = "1.000000000000000000000000000000000E+34";
        // 1E+40 and just below, with 34 digits: the last one given.
        let up = |d: &str| format!("1.00000000000000000000000000000000{d}E+40");
        let below = |d: &str| format!("9.99999999999999999999999999999999{d}E+39");
        let cases = [
            ("0.1", "0.2", "0.3".into()),
            ("1E+30", "1", "1000000000000000000000000000001".into()),
            ("1E+40", "1", up("0")),
            // Half a unit of the 34th digit goes to even; more goes up.
            ("1E+40", "5E+6", up("0")),
            ("1E+40", "1.5E+7", up("2")),
            ("1E+40", "5000001", up("1")),
            // Digits far below the 34th (the sticky digit), added and subtracted.
            ("1E+40", "5.000000000000000000000000000000001E+6", up("1")),
            ("1E+40", "-5.0000000000000000000000000000001E+5", below("9")),
            ("1E+40", "-5E+5", up("0")),
            ("1E+40", "-5000000.1", below("5")),
            ("1E+40", "-1E-6000", up("0")),
            ("1E+40", "1E-6000", up("0")),
            (nines, "1", e34.into()),
            (nines, "0.5", e34.into()),
            (nines, "0.49", nines.into()),
            (nines, "-1E+34", "-1".into()),
            // Signs, cancellation, zeros (at the smaller exponent).
            ("-1.25", "0.5", "-0.75".into()),
            ("1.25", "-2", "-0.75".into()),
            ("-1", "-2", "-3".into()),
            ("1.5", "-1.50", "0.00".into()),
            ("-1.5", "1.5", "0.0".into()),
            ("-0", "-0", "-0".into()),
            ("-0", "0", "0".into()),
            ("-0E+3", "-0.00", "-0.00".into()),
            ("1E+5", "0.000", "100000.000".into()),
            ("0E+5", "-1E-3", "-0.001".into()),
            ("1E+6111", "0E-6176", e34.replace("34", "6111")),
            (max, "-1", max.into()),
            // IEEE specials.
            ("Infinity", "1", "Infinity".into()),
            ("-Infinity", "-Infinity", "-Infinity".into()),
            ("Infinity", "-Infinity", "NaN".into()),
            ("NaN", "1", "NaN".into()),
            ("sNaN", "1", "NaN".into()),
        ];
        for (a, b, want) in cases {
            for (x, y) in [(a, b), (b, a)] {
                let Ok(D(sum)) = add(&d(x), &d(y)) else {
                    panic!("{x} + {y}")
                };
                assert_eq!(sum.to_string(), want, "{x} + {y}");
            }
        }
        assert_eq!(add(&d(max), &d(max)), Err(NumberError::Overflow));
    }

    #[test]
    fn parts_round_trip() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for i in 0..400 {
            let c = ((next() as u128) << 64 | next() as u128) % pow10(i % 35);
            let (e, neg) = ((next() % 12288) as i32 + EXP_MIN, next() % 2 == 1);
            let d = decimal_from_parts(neg, c, e);
            let parsed: Decimal128 = d.to_string().parse().unwrap();
            assert_eq!(parsed.bytes(), d.bytes(), "{d}");
            assert_eq!(decimal_parts(&parsed), Some((neg, c, e)), "{d}");
        }
        assert_eq!(
            decimal_parts(&"-1.25".parse().unwrap()),
            Some((true, 125, -2))
        );
        assert_eq!(decimal_parts(&"Infinity".parse().unwrap()), None);
        assert_eq!(decimal_parts(&"NaN".parse().unwrap()), None);
        // Non-canonical coefficients, in both forms, read as 0 (as bson prints them).
        let big = (6176u128 + 3) << 113 | ((1 << 113) - 1);
        assert_eq!(
            decimal_parts(&Decimal128::from_bytes(big.to_le_bytes())),
            Some((false, 0, 3))
        );
        let other = 1 << 127 | 0b11 << 125 | (6176u128 - 2) << 111 | 12345;
        let other = Decimal128::from_bytes(other.to_le_bytes());
        assert_eq!(decimal_parts(&other), Some((true, 0, -2)));
        assert_eq!(
            other.to_string(),
            decimal_from_parts(true, 0, -2).to_string()
        );
    }

    #[test]
    fn compare_across_types() {
        use Ordering::{Equal, Greater, Less};
        let (nan, inf, m40) = (f64::NAN, f64::INFINITY, 2f64.powi(-40));
        let m40d = "9.09494701772928237915039062";
        let tenth = "0.100000000000000005551115123125782";
        let cases = [
            (Int64(i64::MAX), Double(9.223372036854776e18), Less),
            (Int64(i64::MAX), Double(9.223372036854775e18), Greater),
            (Int64(i64::MIN), Double(-9.223372036854776e18), Equal),
            (Int64(1 << 53 | 1), Double((1u64 << 53) as f64), Greater),
            (Int32(-2), Double(-1.5), Less),
            (Int32(2), Int64(2), Equal),
            (d("1.0"), Int32(1), Equal),
            (Int32(1), d("1.000000000000000000000000000000001"), Less),
            (d("-0"), Int32(0), Equal),
            (d("-0"), Double(0.0), Equal),
            (Double(-0.0), Double(0.0), Equal),
            (d("9223372036854775808"), Int64(i64::MAX), Greater),
            (d("-2.5"), d("-2.50"), Equal),
            (d("1E+10"), d("99999999.99"), Greater),
            (d("0.5"), Double(0.5), Equal),
            (d("0.1"), Double(0.1), Less),
            // The double 0.1 is 0.1000000000000000055511151231257827021...; 2^-40 is exact.
            (d(&format!("{tenth}8")), Double(0.1), Greater),
            (d(&format!("{tenth}7")), Double(0.1), Less),
            (d(&format!("{m40d}5E-13")), Double(m40), Equal),
            (d(&format!("{m40d}6E-13")), Double(m40), Greater),
            (Double(-m40), d(&format!("-{m40d}4E-13")), Less),
            (d("1E-400"), Double(0.0), Greater),
            (d("1E-400"), Double(5e-324), Less),
            (d("1E+6000"), Double(f64::MAX), Greater),
            (d("1E+6000"), Double(inf), Less),
            (d("-Infinity"), Double(-inf), Equal),
            // NaN: below everything, equal to NaN.
            (Double(nan), Int32(i32::MIN), Less),
            (Double(nan), Double(-inf), Less),
            (d("NaN"), d("-Infinity"), Less),
            (d("NaN"), Double(nan), Equal),
            (Double(nan), Double(nan), Equal),
        ];
        for (a, b, want) in cases {
            assert_eq!(compare(&a, &b), Some(want), "{a} vs {b}");
            assert_eq!(compare(&b, &a), Some(want.reverse()), "{b} vs {a}");
        }
        assert_eq!(compare(&Int32(1), &Bson::Null), None);
        assert_eq!(compare(&Bson::String("1".into()), &d("1")), None);
    }

    #[test]
    fn exact_sums_do_not_depend_on_the_order() {
        let f = |v: &[f64]| fsum(v.iter().copied());
        assert_eq!(f(&[]), 0.0);
        assert_eq!(f(&[0.1, 0.2, -0.1, -0.2]), 0.0);
        assert_eq!(f(&[1e20, 1.0, -1e20]), 1.0);
        assert_eq!(f(&[1e20, -1e20, 1.0]), 1.0);
        assert_eq!(f(&[0.1; 10]), 1.0);
        assert_eq!(f(&[0.1, 0.2]), 0.30000000000000004);
        // Half-even at the end: 1 + 2^-53 + 2^-106 rounds up, 1 + 2^-53 alone to even.
        let (a, b) = (2f64.powi(-53), 2f64.powi(-106));
        assert_eq!(f(&[1.0, a]), 1.0);
        assert_eq!(f(&[1.0, a, b]), 1.0 + 2.0 * a);
        assert_eq!(f(&[1e308, 1e308, -1e308]), f64::INFINITY);
        assert!(f(&[f64::NAN, 1.0]).is_nan());
        assert_eq!(f(&[f64::INFINITY, 1.0]), f64::INFINITY);
        let v: Vec<Bson> = [1, 2].map(Int32).into_iter().chain([Double(0.5)]).collect();
        let refs: Vec<&Bson> = v.iter().collect();
        assert_eq!(sum(&refs), Ok(Double(3.5)));
        assert_eq!(sum(&refs[..2]), Ok(Int32(3)));
        assert_eq!(sum(&[]), Ok(Int32(0)));
        assert_eq!(
            sum(&[&Int64(i64::MAX), &Int32(1)]),
            Err(NumberError::Overflow)
        );
    }
}
