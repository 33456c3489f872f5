use super::*;

#[test]
fn thousands() {
    assert_eq!(n(0), "0");
    assert_eq!(n(999), "999");
    assert_eq!(n(1000), "1,000");
    assert_eq!(n(1234567), "1,234,567");
}
