use super::*;

#[test]
fn shell_words() {
    assert_eq!(shell_word("trades"), "trades");
    assert_eq!(shell_word("my coll"), "'my coll'");
    assert_eq!(shell_word("it's"), "'it'\\''s'");
    assert_eq!(shell_word(""), "''");
}
