//! The documentation's lists are written once, and its links resolve.
//!
//! - The chapter list (`docs/chapters.md`, the guide's page) and the "which pattern" table
//!   (`docs/which-pattern.md`, the crate's front page) are written once, with rustdoc's links.
//!   The README's copies are made from them, each link turned into the chapter's Markdown file:
//!   a README that differs fails here, and `PATTERN_BLESS=1 cargo test -p pattern-core --test docs`
//!   rewrites it.
//! - Every relative link of the repository's Markdown files names a file that exists. The
//!   chapters under `pattern-core/docs/` are rustdoc's: they link with paths (`crate::guide::x`)
//!   or to the web, never to a file, which rustdoc would publish as a broken link.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The file `include_str!` names on `line`, if any.
fn included(line: &str) -> Option<&str> {
    let start = line.find("include_str!(\"../docs/")? + "include_str!(\"../docs/".len();
    let end = start + line[start..].find('"')?;
    Some(&line[start..end])
}

/// Each rustdoc path a chapter is published at, with its Markdown file (from the repository's
/// root): the guide's modules (`guide.rs`), the derives (`lib.rs`) and `testing`.
fn chapters() -> BTreeMap<String, String> {
    let src = root().join("pattern-core/src");
    let mut at = BTreeMap::new();
    let mut module = None;
    for line in read(&src.join("guide.rs")).lines() {
        if let Some(rest) = line.strip_prefix("pub mod ") {
            module = Some(rest.trim_end_matches(" {").to_owned());
        } else if let (Some(m), Some(file)) = (&module, included(line)) {
            at.insert(
                format!("crate::guide::{m}"),
                format!("pattern-core/docs/{file}"),
            );
        }
    }
    let lib = read(&src.join("lib.rs"));
    let lines: Vec<&str> = lib.lines().collect();
    for (n, line) in lines.iter().enumerate() {
        let Some(file) = included(line).filter(|_| line.starts_with("#[doc")) else {
            continue;
        };
        let item = lines[n + 1..]
            .iter()
            .find(|l| l.starts_with("pub use"))
            .expect("the item");
        let name = item
            .rsplit("::")
            .next()
            .expect("a name")
            .trim_end_matches(';');
        at.insert(
            format!("macro@crate::{name}"),
            format!("pattern-core/docs/{file}"),
        );
    }
    let testing = read(&src.join("testing.rs"));
    let file = included(testing.lines().next().expect("a line")).expect("testing.md");
    at.insert("crate::testing".into(), format!("pattern-core/docs/{file}"));
    at
}

/// `text` with each rustdoc link `[x](path)` to a chapter made a link to its file, and any
/// other rustdoc link (`crate::bucket::archive`) made its text alone.
fn for_readme(text: &str, chapters: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find("](") {
        let close = open + rest[open..].find(')').expect("a closed link");
        let target = &rest[open + 2..close];
        let start = rest[..open].rfind('[').expect("a link's text");
        if let Some(file) = chapters.get(target) {
            out.push_str(&rest[..open]);
            out.push_str("](");
            out.push_str(file);
            out.push(')');
        } else if target.contains("::") {
            out.push_str(&rest[..start]);
            out.push_str(&rest[start + 1..open]);
        } else {
            out.push_str(&rest[..=close]);
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// The README's part between `<!-- begin NAME ... -->` and `<!-- end NAME -->`.
fn section(readme: &str, name: &str) -> (usize, usize) {
    let begin = format!("<!-- begin {name}");
    let start = readme
        .find(&begin)
        .unwrap_or_else(|| panic!("README.md has no `{begin}`"));
    let start = start + readme[start..].find("-->\n").expect("the marker's end") + 4;
    let end = readme
        .find(&format!("<!-- end {name} -->"))
        .expect("the end marker");
    (start, end)
}

#[test]
fn the_readme_copies_the_chapter_list_and_the_pattern_table() {
    let chapters = chapters();
    let path = root().join("README.md");
    let mut readme = read(&path);
    let mut stale = Vec::new();
    for (name, file) in [
        ("chapters", "chapters.md"),
        ("which-pattern", "which-pattern.md"),
    ] {
        let source = read(&root().join("pattern-core/docs").join(file));
        let wanted = for_readme(&source, &chapters);
        let (start, end) = section(&readme, name);
        if readme[start..end] != wanted {
            stale.push(file);
            readme.replace_range(start..end, &wanted);
        }
    }
    if std::env::var_os("PATTERN_BLESS").is_some() {
        std::fs::write(&path, readme).expect("write README.md");
    } else {
        assert!(
            stale.is_empty(),
            "README.md's copies of {stale:?} differ from pattern-core/docs: run \
             PATTERN_BLESS=1 cargo test -p pattern-core --test docs"
        );
    }
}

#[test]
fn every_chapter_is_listed_once() {
    let listed = read(&root().join("pattern-core/docs/chapters.md"));
    for (path, file) in chapters() {
        let link = format!("]({path})");
        assert_eq!(
            listed.matches(&link).count(),
            1,
            "{file} ({path}) in docs/chapters.md"
        );
    }
}

/// The Markdown files of the repository, but for build output and vendored trees.
fn markdown(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a directory") {
        let path = entry.expect("an entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "node_modules" {
                markdown(&path, out);
            }
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

/// The targets of the inline links `[text](target)` of `text`, outside code blocks and spans.
fn links(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Code spans hold no links.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(open) = rest.find("](") {
            let Some(close) = rest[open..].find(')') else {
                break;
            };
            found.push(rest[open + 2..open + close].to_owned());
            rest = &rest[open + close..];
        }
    }
    found
}

#[test]
fn every_relative_link_of_the_markdown_files_resolves() {
    let root = root();
    let mut files = Vec::new();
    markdown(&root, &mut files);
    assert!(files.len() > 20, "{files:?}");
    let chapters = root.join("pattern-core/docs");
    let mut broken = Vec::new();
    for file in &files {
        for target in links(&read(file)) {
            let web = target.starts_with("http://") || target.starts_with("https://");
            let path_link = target.contains("::") || target.contains('@');
            if web || path_link || target.starts_with('#') || target.starts_with("mailto:") {
                continue;
            }
            let target = target.split('#').next().unwrap_or("");
            if file.starts_with(&chapters) {
                broken.push(format!(
                    "{}: {target} (a chapter links with rustdoc paths)",
                    file.display()
                ));
            } else if !file.parent().expect("a folder").join(target).exists() {
                broken.push(format!("{}: {target}", file.display()));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links to no file:\n{}",
        broken.join("\n")
    );
}

/// Code a reader sees whole: rustdoc shows about 95 characters of a chapter's code block before
/// it scrolls, whatever the window's width (`scripts/screenshots.sh`); GitHub about as many of
/// the README's. Program
/// output (`console`, `text` blocks) is shown as printed, and hidden doctest lines (`# `) not
/// at all.
#[test]
fn the_chapters_code_fits_without_scrolling() {
    let chapters = root().join("pattern-core/docs");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&chapters)
        .expect("the chapters")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.push(root().join("README.md"));
    let mut wide = Vec::new();
    for file in &files {
        let mut block: Option<String> = None;
        for (n, line) in read(file).lines().enumerate() {
            if let Some(fence) = line.trim_start().strip_prefix("```") {
                block = if block.is_some() {
                    None
                } else {
                    Some(fence.to_owned())
                };
                continue;
            }
            let shown = matches!(&block, Some(lang) if lang != "console" && lang != "text");
            if shown && !line.starts_with("# ") && line.chars().count() > 95 {
                wide.push(format!(
                    "{}:{}: {} characters",
                    file.display(),
                    n + 1,
                    line.chars().count()
                ));
            }
        }
    }
    assert!(
        wide.is_empty(),
        "code lines past 95 characters:\n{}",
        wide.join("\n")
    );
}
