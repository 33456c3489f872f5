//! The derives' compile-fail cases under trybuild: `<derive>/<case>.rs` and the `.stderr` it
//! must print. `TRYBUILD=overwrite cargo test -p pattern-ui-tests` writes the `.stderr` files
//! anew (read every one: the caret must sit under the offending token). The compile-pass cases
//! are this package's examples, which `cargo test` builds; with none here, trybuild only
//! checks (no code generated).
#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("bucket/*.rs");
    t.compile_fail("outlier/*.rs");
    t.compile_fail("tree/*.rs");
    t.compile_fail("common/*.rs");
    t.compile_fail("document/*.rs");
}
