//! The layers of ARCHITECTURE.md, checked: every path into the crate that a module of
//! `pattern-core/src` names (comments and unit tests aside) — `crate::a::b`, a grouped
//! `use crate::{a::b, c}`, or a relative `super::x` / `self::x` — points into its own layer or
//! a layer below it; and no two files import each other round a cycle (a file may use its own
//! parent or child module: a split file). A new import that points up, or closes a cycle,
//! fails here with the file and the path.
//!
//! Below pattern-core the layers are crates, and Cargo keeps them one way: the store contract
//! (`pattern-store`) depends on no crate of the workspace, and each store (`pattern-memory`,
//! `pattern-mongo`) on the contract alone. [`the_store_crates_depend_on_the_contract_alone`]
//! reads their manifests.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layer of a module path (`["store", "memory", "push"]`), as ARCHITECTURE.md lists them.
fn layer_of(path: &[String]) -> &'static str {
    let p: Vec<&str> = path.iter().map(String::as_str).collect();
    match p.as_slice() {
        [] => "lib",
        ["guide", ..] | ["__private", ..] => "lib",
        ["adopt", ..] => "adoption",
        ["follow", ..] => "follower",
        ["bucket" | "outlier" | "tree" | "document" | "layout" | "testing" | "validator", ..]
        | ["Bucket" | "Outlier" | "Tree" | "Document" | "Page" | "Counts" | "Typical", ..]
        // A pattern's documentation macro, exported at the root (`tree/docs.rs`, `bucket/docs.rs`...).
        | ["__tree_doc" | "__bucket_doc" | "__outlier_doc" | "__document_doc", ..] => "patterns",
        ["pass", ..] => "passes",
        ["series", ..] => "series",
        ["store", "query", ..] => "query",
        ["store", "any" | "any_txn", ..] | ["AnyStore" | "MemoryStore" | "MongoStore", ..] => {
            "store implementations"
        }
        ["store", ..] | ["transaction" | "transaction_with", ..] => "store contract",
        ["spec", ..] => "specs",
        ["codec" | "key" | "error" | "money" | "local_time" | "observe", ..]
        | ["Error" | "Result" | "Missing" | "LocalTime" | "LocalTimeError", ..] => "foundation",
        other => panic!(
            "no layer for `crate::{}`: add it to this test",
            other.join("::")
        ),
    }
}

/// What each layer may import besides itself.
fn allowed(from: &str) -> &'static [&'static str] {
    match from {
        "lib" => &[
            "adoption",
            "follower",
            "patterns",
            "passes",
            "series",
            "store contract",
            "store implementations",
            "specs",
            "query",
            "foundation",
        ],
        "follower" => &[
            "patterns",
            "passes",
            "series",
            "store contract",
            "specs",
            "query",
            "foundation",
        ],
        "adoption" => &[
            "patterns",
            "passes",
            "series",
            "store contract",
            "specs",
            "query",
            "foundation",
        ],
        "patterns" => &[
            "passes",
            "series",
            "store contract",
            "specs",
            "query",
            "foundation",
        ],
        "passes" => &["store contract", "specs", "query", "foundation"],
        "series" => &["store contract", "specs", "query", "foundation"],
        "store implementations" => &["store contract", "query", "foundation"],
        "store contract" => &["query", "foundation"],
        "specs" => &["foundation"],
        "query" => &["foundation"],
        "foundation" => &[],
        other => panic!("unknown layer {other}"),
    }
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file under `src/` (`series/ingest/mod.rs` → `["series", "ingest"]`).
fn module_of(rel: &str) -> Vec<String> {
    let rel = rel.trim_end_matches(".rs");
    let mut parts: Vec<String> = rel.split('/').map(str::to_owned).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The code of a file without its comments and its inline unit tests.
fn code_of(text: &str) -> String {
    let text = text.split("#[cfg(test)]\nmod tests {").next().unwrap_or("");
    text.lines()
        .map(|l| match l.find("//") {
            // `//` inside a string (a URI) is kept: only a comment that starts the code part.
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Expands a `use` tree (`crate::{a::b, c::{d, e}}`) into its leaf paths.
fn expand(tree: &str) -> Vec<String> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(open) = tree.find('{') else {
        return vec![tree.split(" as ").next().unwrap_or(&tree).to_owned()];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.len().saturating_sub(1)];
    let mut items = Vec::new();
    let (mut depth, mut cur) = (0, String::new());
    for ch in inner.chars() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    items.push(cur);
    items
        .into_iter()
        .filter(|i| !i.is_empty())
        .flat_map(|i| {
            let i = if i == "self" {
                prefix.trim_end_matches("::").to_owned()
            } else {
                format!("{prefix}{i}")
            };
            expand(&i)
        })
        .collect()
}

/// The module path at each byte of `code`: the file's module, plus the inline modules
/// (`mod raw { ... }`) the byte is in.
fn modules_by_offset(code: &str, file_module: &[String]) -> Vec<Vec<String>> {
    let mut stack: Vec<(String, usize)> = Vec::new(); // (name, brace depth inside it)
    let (mut depth, mut out) = (0usize, Vec::with_capacity(code.len()));
    let mut pending: Option<String> = None;
    let mut prev = ' ';
    for (i, ch) in code.char_indices() {
        if ch == 'm' && !(prev.is_alphanumeric() || prev == '_') && code[i..].starts_with("mod ") {
            let name = ident(&code[i + 4..]);
            let after = code[i + 4 + name.len()..].trim_start();
            if !name.is_empty() && after.starts_with('{') {
                pending = Some(name);
            }
        }
        match ch {
            '{' => {
                depth += 1;
                if let Some(name) = pending.take() {
                    stack.push((name, depth));
                }
            }
            '}' => {
                if stack.last().is_some_and(|(_, d)| *d == depth) {
                    stack.pop();
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        let mut m = file_module.to_vec();
        m.extend(stack.iter().map(|(n, _)| n.clone()));
        for _ in 0..ch.len_utf8() {
            out.push(m.clone());
        }
        prev = ch;
    }
    out
}

/// Every path into the crate a file's code names, resolved to absolute module paths: the
/// leaves of its `use` trees, and the `crate::`/`super::` paths elsewhere in its code.
fn crate_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let at = modules_by_offset(code, module);
    let here = |i: usize| at.get(i).cloned().unwrap_or_else(|| module.to_vec());
    let mut raw: Vec<(String, Vec<String>)> = Vec::new();
    // `use` statements (a tree may span lines); their text is then blanked out.
    let mut code = code.to_owned();
    let mut from = 0;
    while let Some(k) = code[from..].find("use ") {
        let i = from + k;
        from = i + 4;
        if code[..i]
            .chars()
            .last()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            continue;
        }
        let end = code[from..].find(';').map_or(code.len(), |e| from + e);
        for leaf in expand(&code[from..end]) {
            raw.push((leaf, here(i)));
        }
        code.replace_range(i..end, &" ".repeat(end - i));
    }
    // Paths in the code (`crate::store::Store::x()`, `super::index::Key`).
    for start in ["crate::", "super::"] {
        for (i, _) in code.match_indices(start) {
            let prev = code[..i].chars().last();
            if prev.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '$') {
                continue;
            }
            let path: String = code[i..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            raw.push((path, here(i)));
        }
    }
    let mut out = Vec::new();
    for (path, module) in raw {
        let mut segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
        let mut base: Vec<String> = match segs.first() {
            Some(&"crate") => {
                segs.remove(0);
                Vec::new()
            }
            Some(&"super") | Some(&"self") => module.clone(),
            _ => continue, // an external crate or a name in scope
        };
        while let Some(&s) = segs.first() {
            match s {
                "super" => {
                    base.pop();
                }
                "self" => {}
                _ => break,
            }
            segs.remove(0);
        }
        base.extend(segs.iter().map(|s| ident(s)).filter(|s| !s.is_empty()));
        if base.is_empty() || base.iter().any(|s| s == "tests") {
            continue; // the crate root itself (`use crate::{...}`'s prefix), or a unit test
        }
        out.push(base);
    }
    out
}

/// A file (its path under `src/`), its module path, and the module paths it imports.
type FileImports = (String, Vec<String>, Vec<Vec<String>>);

/// The source files by module path, and what each imports.
fn imports() -> Vec<FileImports> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    assert!(
        files.len() > 20,
        "sources not found under {}",
        src.display()
    );
    let mut out = Vec::new();
    for file in files {
        let rel = (file.strip_prefix(&src).unwrap().to_string_lossy()).replace('\\', "/");
        let module = module_of(&rel);
        if module.iter().any(|m| m == "tests" || m.ends_with("_tests")) {
            continue; // unit tests may reach anything
        }
        let code = code_of(&std::fs::read_to_string(&file).unwrap());
        let paths = crate_paths(&code, &module);
        out.push((rel, module, paths));
    }
    out
}

/// The offenders against the layers among `files`.
fn upward(files: &[FileImports]) -> Vec<String> {
    let mut wrong = Vec::new();
    for (rel, module, paths) in files {
        let from = layer_of(module);
        for path in paths {
            let to = layer_of(path);
            if to != from && !allowed(from).contains(&to) {
                wrong.push(format!(
                    "src/{rel} ({from}) imports crate::{} ({to})",
                    path.join("::")
                ));
            }
        }
    }
    wrong
}

/// The cycles among the files' imports, a file's own ancestors and descendants aside.
fn cycles(files: &[FileImports]) -> Vec<String> {
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| f.1.clone()).collect();
    // The module a path lands in: its longest prefix that is a file.
    let owner = |path: &[String]| -> Option<Vec<String>> {
        (0..=path.len())
            .rev()
            .map(|n| path[..n].to_vec())
            .find(|p| modules.contains(p))
    };
    let nested = |a: &[String], b: &[String]| a.starts_with(b) || b.starts_with(a);
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (_, module, paths) in files {
        for path in paths {
            if let Some(to) = owner(path).filter(|to| !nested(module, to)) {
                edges.entry(module.clone()).or_default().insert(to);
            }
        }
    }
    let mut found = Vec::new();
    for (a, outs) in &edges {
        for b in outs {
            // Is there a way back from `b` to `a`?
            let (mut seen, mut todo) = (BTreeSet::new(), vec![b.clone()]);
            while let Some(m) = todo.pop() {
                if &m == a {
                    found.push(format!(
                        "{} -> {} -> ... -> {}",
                        a.join("::"),
                        b.join("::"),
                        a.join("::")
                    ));
                    break;
                }
                if seen.insert(m.clone()) {
                    todo.extend(edges.get(&m).into_iter().flatten().cloned());
                }
            }
        }
    }
    found
}

#[test]
fn no_module_imports_a_layer_above_it() {
    let wrong = upward(&imports());
    assert!(
        wrong.is_empty(),
        "imports against the layers of ARCHITECTURE.md:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_two_files_import_each_other() {
    let found = cycles(&imports());
    assert!(
        found.is_empty(),
        "import cycles between files:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_checker_sees_every_form_of_an_import_upwards() {
    let module = |m: &str| m.split('/').map(str::to_owned).collect::<Vec<_>>();
    let planted = [
        // A grouped import, a nested group, a relative path, a path in the code.
        ("store/any.rs", "use crate::{error::Error, series::push};"),
        (
            "store/any.rs",
            "use crate::{store::{Store, query::Filter}, bucket::{Bucket}};",
        ),
        ("store/any.rs", "use super::super::adopt::migrate_bucket;"),
        ("spec.rs", "fn f() { crate::tree::raw::walk(); }"),
        ("codec/ser/mod.rs", "use super::super::store::Store;"),
        // The contract's re-exports naming a pattern's spec.
        ("store/mod.rs", "use crate::spec::SeriesSpec;"),
        // A pattern reaching up into the adoption tooling.
        ("bucket/archive.rs", "use crate::adopt::Options;"),
    ];
    for (rel, code) in planted {
        let m = module_of(rel);
        let files = vec![(rel.to_owned(), m.clone(), crate_paths(code, &m))];
        assert_eq!(
            upward(&files).len(),
            1,
            "{rel}: `{code}` not caught: {:?}",
            files[0].2
        );
    }
    // Comments and strings do not count; a permitted import passes.
    let ok =
        "// use crate::bucket::x;\nlet u = \"mongodb://h\"; use crate::{store::query::Filter, Result};";
    let m = module("store/any.rs");
    let files = vec![(
        "store/any.rs".to_owned(),
        m.clone(),
        crate_paths(&code_of(ok), &m),
    )];
    assert!(upward(&files).is_empty(), "{:?}", files[0].2);
    // Two sibling files that import each other are a cycle; a parent and its child are not.
    let a = (
        String::from("a.rs"),
        module("store/memory/a"),
        vec![module("store/memory/b/X")],
    );
    let b = (
        String::from("b.rs"),
        module("store/memory/b"),
        vec![module("store/memory/a/Y")],
    );
    let p = (
        String::from("p.rs"),
        module("store/memory/p"),
        vec![module("store/memory/p/c/Z")],
    );
    let c = (
        String::from("c.rs"),
        module("store/memory/p/c"),
        vec![module("store/memory/p/W")],
    );
    assert_eq!(cycles(&[a, b]).len(), 2);
    assert!(cycles(&[p, c]).is_empty());
}

/// The `pattern-*` crates a manifest's `[dependencies]` names (not its dev-dependencies).
fn workspace_dependencies(manifest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        let name = line.split(['=', '.', ' ']).next().unwrap_or("");
        if in_deps && name.starts_with("pattern-") {
            out.push(name.to_owned());
        }
    }
    out
}

#[test]
fn the_store_crates_depend_on_the_contract_alone() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let deps = |krate: &str| {
        let manifest = std::fs::read_to_string(root.join(krate).join("Cargo.toml")).unwrap();
        workspace_dependencies(&manifest)
    };
    assert_eq!(deps("pattern-store"), Vec::<String>::new(), "the contract");
    assert_eq!(
        deps("pattern-memory"),
        ["pattern-store"],
        "the embedded store"
    );
    assert_eq!(
        deps("pattern-mongo"),
        ["pattern-store"],
        "the MongoDB store"
    );
    let core = deps("pattern-core");
    for krate in ["pattern-store", "pattern-memory", "pattern-mongo"] {
        assert!(
            core.contains(&krate.to_owned()),
            "pattern-core takes {krate}"
        );
    }
    // The checker reads what it should: a store depending on pattern-core is seen.
    let planted = "[dependencies]\npattern-store.workspace = true\npattern-core = { workspace = true }\n\n[dev-dependencies]\npattern-derive.workspace = true\n";
    assert_eq!(
        workspace_dependencies(planted),
        ["pattern-store", "pattern-core"]
    );
}

/// The names `lib.rs` makes public at the crate's root: its public modules and what it
/// re-exports (a derive and its trait share a name, and count once).
fn root_names() -> BTreeSet<String> {
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
        .expect("lib.rs");
    let mut names = BTreeSet::new();
    let mut hidden = false;
    for line in lib.lines() {
        if line.starts_with("#[doc(hidden)]") {
            hidden = true;
            continue;
        }
        if let Some(m) = line.strip_prefix("pub mod ") {
            if !hidden {
                names.insert(m.trim_end_matches([';', ' ', '{']).to_owned());
            }
        } else if let Some(path) = line.strip_prefix("pub use ") {
            for name in expand(path.trim_end_matches(';')) {
                names.insert(name.rsplit("::").next().expect("a name").to_owned());
            }
        }
        if !line.starts_with("#[") && !line.starts_with("///") {
            hidden = false;
        }
    }
    names
}

#[test]
fn the_root_holds_at_most_20_names() {
    let names = root_names();
    assert!(
        names.contains("MemoryStore") && names.contains("bucket"),
        "{names:?}"
    );
    assert!(
        names.len() <= 20,
        "{} names at pattern-core's root: {names:?}",
        names.len()
    );
}

/// Every `.rs` file under the library and command-line crates' `src`.
fn workspace_sources() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace");
    let mut files = Vec::new();
    for krate in [
        "pattern-core",
        "pattern-store",
        "pattern-memory",
        "pattern-mongo",
        "pattern-derive",
        "pattern-cli",
    ] {
        sources(&root.join(krate).join("src"), &mut files);
    }
    assert!(files.len() > 100, "{}", files.len());
    files
}

/// One module file style and one place for unit tests, in every crate (CONTRIBUTING.md,
/// "Conventions"): a module with children is a folder with `mod.rs`, never `x.rs` beside
/// `x/`; a module's unit tests are its child `tests`, at the end of a file module, in
/// `tests.rs` for a folder module (the crate root is one).
#[test]
fn one_module_style_and_one_place_for_unit_tests() {
    let mut wrong = Vec::new();
    for file in workspace_sources() {
        let name = file
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_owned();
        let folder = matches!(name.as_str(), "mod.rs" | "lib.rs" | "main.rs");
        if !folder && file.with_extension("").is_dir() {
            wrong.push(format!(
                "{}: a file beside its folder (make it mod.rs)",
                file.display()
            ));
        }
        let text = std::fs::read_to_string(&file).expect("a source");
        if folder && text.contains("mod tests {") {
            wrong.push(format!(
                "{}: inline tests in a folder module (move them to tests.rs)",
                file.display()
            ));
        }
        let lines: Vec<&str> = text.lines().collect();
        for (n, line) in lines.iter().enumerate() {
            let test_module = n > 0 && lines[n - 1].trim() == "#[cfg(test)]";
            let module = line
                .trim_start()
                .trim_start_matches("pub(crate) ")
                .strip_prefix("mod ");
            if let (true, Some(m)) = (test_module, module) {
                if !m.starts_with("tests") {
                    wrong.push(format!(
                        "{}: test module `{m}` (name it `tests`)",
                        file.display()
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
