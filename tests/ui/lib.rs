//! Holds no code: the package that builds the derives' compile cases against only the
//! dependencies they use. The compile-fail cases (`<derive>/<case>.rs` with their `.stderr`)
//! run under trybuild from `ui.rs`; the compile-pass cases are the package's examples
//! (`examples/`), built by `cargo test`.
