// trybuild compile-fail and compile-pass cases of the derives (owned by the derive work).
#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/bucket/*.rs");
    t.compile_fail("ui/outlier/*.rs");
    t.compile_fail("ui/tree/*.rs");
    t.compile_fail("ui/document/*.rs");
    t.pass("ui/pass/*.rs");
}
