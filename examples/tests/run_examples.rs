//! Runs the example binaries as a user would: in memory (no MONGODB_URI) and on MongoDB.

use std::process::Command;

fn run(bin: &str, mongo: bool) -> String {
    let mut cmd = Command::new(bin);
    if mongo {
        cmd.env("MONGODB_URI", pattern_tests_uri());
    } else {
        cmd.env_remove("MONGODB_URI");
    }
    let out = cmd.output().expect("run the example");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{bin} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `$MONGODB_URI`, or a panic that says how to get a server.
fn pattern_tests_uri() -> String {
    std::env::var("MONGODB_URI").ok().filter(|u| !u.trim().is_empty()).unwrap_or_else(|| {
        panic!(
            "this test needs a MongoDB server and MONGODB_URI is not set: run scripts/test.sh, which installs and \
             starts the SecantusDB test server, or point MONGODB_URI at a mongod or Atlas cluster"
        )
    })
}

fn check_stock_trades(out: &str, store: &str) {
    assert!(out.contains(&format!("store: {store}")), "{out}");
    assert!(out.contains("\"_id\": \"123_1698335223\""), "{out}");
    assert!(out.contains("\"_id\": \"456_1698750962\""), "{out}");
    assert!(
        out.contains("customer 123: 3 trades in 1 bucket(s)"),
        "{out}"
    );
    assert!(
        out.contains("the collection holds the page's final documents"),
        "{out}"
    );
}

#[test]
fn stock_trades_in_memory() {
    check_stock_trades(&run(env!("CARGO_BIN_EXE_stock_trades"), false), "in-memory");
}

#[test]
fn stock_trades_on_mongodb() {
    check_stock_trades(&run(env!("CARGO_BIN_EXE_stock_trades"), true), "MongoDB");
}

fn check_book_sales(out: &str, store: &str) {
    assert!(out.contains(&format!("store: {store}")), "{out}");
    assert!(out.contains(r#"{"_id":1,"title":"Invisible Cities","year":1972,"author":"Italo Calvino","customers_purchased":["user00","user01","user02"]}"#), "{out}");
    assert!(out.contains(r#""customers_purchased":["user00","#), "{out}");
    assert!(out.contains(r#""user49"],"has_extras":true}"#), "{out}");
    assert!(
        out.contains(r#""book_id":2,"count":500,"customers_purchased_extra":["user50","#),
        "{out}"
    );
    assert!(
        out.contains(r#""book_id":2,"count":450,"customers_purchased_extra":["user550","#),
        "{out}"
    );
    assert!(
        out.contains(
            "typical read of book 2 (main document only): 50 buyers shown, has_extras: true"
        ),
        "{out}"
    );
    assert!(
        out.contains("every buyer of book 2: 1000 (user00 .. user999)"),
        "{out}"
    );
    assert!(
        out.contains("all 1000 sales of book 2 are stored, in order"),
        "{out}"
    );
}

#[test]
fn book_sales_in_memory() {
    check_book_sales(&run(env!("CARGO_BIN_EXE_book_sales"), false), "in-memory");
}

#[test]
fn book_sales_on_mongodb() {
    check_book_sales(&run(env!("CARGO_BIN_EXE_book_sales"), true), "MongoDB");
}

fn check_categories(out: &str, store: &str) {
    assert!(out.contains(&format!("store: {store}")), "{out}");
    for model in [
        "parent_refs",
        "child_refs",
        "ancestors",
        "materialized_path",
        "nested_set",
    ] {
        assert!(out.contains(&format!("== model {model} ==")), "{out}");
    }
    assert_eq!(
        out.matches("the documents are the seed's").count(),
        5,
        "{out}"
    );
    assert_eq!(
        out.matches("parent of MongoDB: Databases").count(),
        5,
        "{out}"
    );
    assert_eq!(
        out.matches("children of Databases: MongoDB, dbm").count(),
        5,
        "{out}"
    );
    assert_eq!(
        out.matches("ancestors of MongoDB: Books, Programming, Databases")
            .count(),
        5,
        "{out}"
    );
    assert_eq!(out.matches("verify: 0 defects").count(), 5, "{out}");
    assert!(
        out.contains(r#"{"_id":"MongoDB","path":",Books,Programming,Databases,"}"#),
        "{out}"
    );
    assert!(
        out.contains(r#"{"_id":"Books","parent":null,"left":1,"right":12}"#),
        "{out}"
    );
    assert!(
        out.contains(r#"{"_id":"Programming","children":["Databases","Languages"]}"#),
        "{out}"
    );
}

#[test]
fn categories_in_memory() {
    check_categories(&run(env!("CARGO_BIN_EXE_categories"), false), "in-memory");
}

#[test]
fn categories_on_mongodb() {
    check_categories(&run(env!("CARGO_BIN_EXE_categories"), true), "MongoDB");
}

fn check_adopt(out: &str, store: &str) {
    assert!(out.contains(&format!("store: {store}")), "{out}");
    assert!(out.contains("sales: 1000 books, buyers per book p50 11 p90 20 p99 22 max 3859; 10 over the threshold of 50"), "{out}");
    assert!(out.contains("suggested threshold: 50"), "{out}");
    assert!(
        out.contains("dry run: 10 books would move 22590 buyers into 51 overflow documents"),
        "{out}"
    );
    assert!(
        out.contains("migrated: 10 books, 22590 buyers moved, 51 overflow documents"),
        "{out}"
    );
    assert!(
        out.contains("book 7: 1259 buyers, 50 in its main document, has_extras true"),
        "{out}"
    );
    assert!(
        out.contains("trades: 10000 trades of 162 customers"),
        "{out}"
    );
    assert!(
        out.contains("dry run: 162 customers, 10000 trades into 202 buckets"),
        "{out}"
    );
    assert!(
        out.contains("migrated: 162 customers, 10000 trades into 202 buckets"),
        "{out}"
    );
    assert_eq!(out.matches("verified: clean").count(), 2, "{out}");
    assert!(
        out.contains("customer 0: 286 trades, in time order: true"),
        "{out}"
    );
    assert!(
        out.contains("a second run: already finished true, 0 written"),
        "{out}"
    );
}

#[test]
fn adopt_existing_data_in_memory() {
    check_adopt(
        &run(env!("CARGO_BIN_EXE_adopt_existing_data"), false),
        "in-memory",
    );
}

#[test]
fn adopt_existing_data_on_mongodb() {
    check_adopt(
        &run(env!("CARGO_BIN_EXE_adopt_existing_data"), true),
        "MongoDB",
    );
}

fn check_library_checkout(out: &str, store: &str) {
    assert!(out.contains(&format!("store: {store}")), "{out}");
    assert!(
        out.contains(r#""_id":123456789,"title":"MongoDB: The Definitive Guide""#),
        "{out}"
    );
    assert!(
        out.contains(
            r#""available":3,"checkout":[{"by":"joe","date":{"$date":"2012-10-15T00:00:00Z"}}]"#
        ),
        "{out}"
    );
    assert!(
        out.contains("checkout by abc applied: true; available: 2, log: [\"joe\", \"abc\"]"),
        "{out}"
    );
    assert!(
        out.contains("16 concurrent checkouts: 2 applied, 14 found no copy"),
        "{out}"
    );
    assert!(out.contains("available: 0"), "{out}");
    assert!(
        out.contains("log: joe, abc and the 2 winners (4 entries)"),
        "{out}"
    );
    assert!(out.contains("one more checkout applied: false"), "{out}");
}

#[test]
fn library_checkout_in_memory() {
    check_library_checkout(
        &run(env!("CARGO_BIN_EXE_library_checkout"), false),
        "in-memory",
    );
}

#[test]
fn library_checkout_on_mongodb() {
    check_library_checkout(
        &run(env!("CARGO_BIN_EXE_library_checkout"), true),
        "MongoDB",
    );
}

fn check_keyword_search(out: &str, store: &str) {
    assert!(out.contains(&format!("store: {store}")), "{out}");
    assert!(out.contains("\"topics_1\""), "{out}");
    assert!(
        out.contains("findOne(topics: voyage, title: 1): _id 1, title \"Moby-Dick\""),
        "{out}"
    );
    assert!(
        out.contains("voyage: [\"Moby-Dick\", \"The Odyssey\"]"),
        "{out}"
    );
    assert!(out.contains("voyage and whaling: [\"Moby-Dick\"]"), "{out}");
    assert!(
        out.contains("epic or nature: [\"The Odyssey\", \"Walden\"]"),
        "{out}"
    );
    assert!(out.contains("whale (no stemming): 0 found"), "{out}");
    assert!(
        out.contains("stored tags: [\"mongodb\", \"rust\", \"schema\"]"),
        "{out}"
    );
    assert!(out.contains("RUST and mongodb: 1 found"), "{out}");
}

#[test]
fn keyword_search_in_memory() {
    check_keyword_search(
        &run(env!("CARGO_BIN_EXE_keyword_search"), false),
        "in-memory",
    );
}

#[test]
fn keyword_search_on_mongodb() {
    check_keyword_search(&run(env!("CARGO_BIN_EXE_keyword_search"), true), "MongoDB");
}

fn check_money(out: &str, store: &str) {
    assert!(out.contains(&format!("store: {store}")), "{out}");
    // The seed's `db.clothes.find()` after each conversion.
    assert!(out.contains(r#"{"_id":1,"description":"T-Shirt","size":"M","price":1999,"priceDec":{"$numberDecimal":"19.99"}}"#), "{out}");
    assert!(out.contains(r#"{"_id":5,"description":"Designer Jeans","size":"30","price":8000,"priceDec":{"$numberDecimal":"80.00"}}"#), "{out}");
    assert!(out.contains(r#"{"_id":4,"description":"Cool T-Shirt","size":"L","price":{"$numberDecimal":"24.95"}}"#), "{out}");
    assert!(out.contains(r#"{"_id":4,"description":"Cool T-Shirt","size":"L","priceDec":{"$numberDecimal":"24.95"}}"#), "{out}");
    assert!(
        out.contains(
            "scaled longs: 5 converted in 1 transaction(s), verified 5 of 5 documents, 0 defect(s)"
        ),
        "{out}"
    );
    assert!(
        out.contains("moved into price: 5 document(s) rewritten, clean: true"),
        "{out}"
    );
    assert!(
        out.contains("total of the five prices, in Decimal: 194.92"),
        "{out}"
    );
    assert!(
        out.contains("display strings: 5 converted, 1 refused"),
        "{out}"
    );
    assert!(
        out.contains(r#""reason":"\" 4.99\" is not a display amount (spaces)""#),
        "{out}"
    );
    assert!(
        out.contains(
            "after fixing it: 1 converted, old field dropped from 6 document(s), clean: true"
        ),
        "{out}"
    );
    assert!(
        out.contains("at scale 2: 90071992547409.93 (through f64: 90071992547409.92)"),
        "{out}"
    );
}

#[test]
fn money_in_memory() {
    check_money(&run(env!("CARGO_BIN_EXE_money"), false), "in-memory");
}

#[test]
fn money_on_mongodb() {
    check_money(&run(env!("CARGO_BIN_EXE_money"), true), "MongoDB");
}

fn check_local_time(out: &str, store: &str) {
    assert!(out.contains(&format!("store: {store}")), "{out}");
    assert!(
        out.contains(r#"{"_id":1,"date":{"$date":"2024-07-01T07:30:00Z"},"offset":-120}"#),
        "{out}"
    );
    assert!(
        out.contains(r#"{"_id":3,"date":{"$date":"2024-03-10T06:15:00Z"},"offset":-345}"#),
        "{out}"
    );
    assert!(
        out.contains(
            "2: 2024-01-15T23:59:59.999-05:00 (wall clock 2024-01-15 23:59, offset 300 minutes)"
        ),
        "{out}"
    );
    assert!(out.contains("4: 2024-07-01T09:30:00+02:00"), "{out}");
    assert!(
        out.contains("every original time and offset given back exactly: true"),
        "{out}"
    );
    assert!(
        out.contains("refused: 500 ns past the millisecond"),
        "{out}"
    );
    assert!(
        out.contains("refused: offset +00:19:32 has seconds"),
        "{out}"
    );
}

#[test]
fn local_time_in_memory() {
    check_local_time(&run(env!("CARGO_BIN_EXE_local_time"), false), "in-memory");
}

#[test]
fn local_time_on_mongodb() {
    check_local_time(&run(env!("CARGO_BIN_EXE_local_time"), true), "MongoDB");
}

fn check_evolving_documents(out: &str, store: &str) {
    assert!(out.contains(&format!("store: {store}")), "{out}");
    assert!(
        out.contains(r#"{"_id":1,"name":"Ada Lovelace","email":"ada.lovelace@example.com"}"#),
        "{out}"
    );
    assert!(
        out.contains("the new build (v3) reads 9 customers: Ada Lovelace, Alan Turing, Grace Hopper, Edsger Dijkstra, John Backus, Katherine Johnson, Ken Thompson, Dennis Ritchie, Barbara Liskov"),
        "{out}"
    );
    assert!(
        out.contains("stored: 3 at v1, 6 at v2 (reads write nothing)"),
        "{out}"
    );
    assert!(
        out.contains(r#"{"_id":1,"first":"Ada","last":"Lovelace","email":"ada.lovelace@example.com","visits":1,"tier":"gold","schema_version":3,"revision":2,"#),
        "{out}"
    );
    for write in ["get", "update_one", "save"] {
        assert!(
            out.contains(&format!(
                "old build, {write} of customer 1: NewerVersion (found 3, known 2)"
            )),
            "{out}"
        );
    }
    assert!(
        out.contains("customer 1 unchanged: the old build never overwrites a newer version"),
        "{out}"
    );
    assert!(
        out.contains("refused (NewerVersion) on customer 3"),
        "{out}"
    );
    assert!(out.contains("stored: 2 at v1, 5 at v2, 2 at v3"), "{out}");
    assert!(
        out.contains("dry run: found v1: 2, v2: 5; would upgrade 7, fail 0"),
        "{out}"
    );
    assert!(
        out.contains("sweep: 3 read\n   sweep: 6 read\n   sweep: 7 read\n"),
        "{out}"
    );
    assert!(out.contains("sweep: upgraded 7, failed 0"), "{out}");
    assert!(out.contains("sweep again: upgraded 0, failed 0"), "{out}");
    assert!(
        out.contains(r#"swept: {_id: 5, first: "John", last: "Backus", tier: "standard", schema_version: 3, revision: 1}"#),
        "{out}"
    );
    assert!(
        out.contains("saved again on revision 2: Conflict (found 3), nothing written"),
        "{out}"
    );
    let history: Vec<&str> = out
        .lines()
        .filter(|l| l.trim_start().starts_with("revision ") && l.contains(" since "))
        .collect();
    assert_eq!(history.len(), 4, "{out}");
    for (line, (n, email, visits, tier)) in history.iter().zip([
        (3, "ada@analytical-engine.org", 1, "gold"),
        (2, "ada.lovelace@example.com", 1, "gold"),
        (1, "ada.lovelace@example.com", 0, "standard"),
        (0, "ada.lovelace@example.com", 0, "standard"),
    ]) {
        assert!(
            line.trim_start()
                .starts_with(&format!("revision {n} since ")),
            "{out}"
        );
        assert!(
            line.ends_with(&format!(r#": {{"_id":1,"first":"Ada","last":"Lovelace","email":"{email}","visits":{visits},"tier":"{tier}"}}"#)),
            "{out}"
        );
    }
    assert!(history[3].contains("since before history"), "{out}");
    assert!(
        out.contains(
            "at revision 0: Ada Lovelace, ada.lovelace@example.com, tier standard, 0 visits"
        ),
        "{out}"
    );
    assert!(
        out.contains(r#"revision 0 as kept in customers_history: {"_id":1,"name":"Ada Lovelace","email":"ada.lovelace@example.com"}"#),
        "{out}"
    );
    assert!(
        out.contains("every customer at version 3; nothing lost (9 customers, "),
        "{out}"
    );
}

#[test]
fn evolving_documents_in_memory() {
    check_evolving_documents(
        &run(env!("CARGO_BIN_EXE_evolving_documents"), false),
        "in-memory",
    );
}

#[test]
fn evolving_documents_on_mongodb() {
    check_evolving_documents(
        &run(env!("CARGO_BIN_EXE_evolving_documents"), true),
        "MongoDB",
    );
}

fn check_film_catalogue(out: &str, store: &str) {
    assert!(out.contains(&format!("store: {store}")), "{out}");
    for line in [
        "1. 3 directors, 4 films, 25 reviews",
        r#"film 1's copy, built with copy_of(&director): {"_id":1,"name":"Fritz Lang","photo":"https://example.com/directors/fritz-lang.jpg"}"#,
        r#"film 2's copy, inserted with the director's _id only, filled from directors: {"_id":2,"name":"F. W. Murnau","photo":"https://example.com/directors/f-w-murnau.jpg"}"#,
        "film 4 M (Fritz Lang): 0 reviews",
        "film 1 Metropolis (Fritz Lang): 13 reviews, avg 3.08, max 5, recent holds 10, newest 2024-03-25",
        "film 2 Nosferatu (F. W. Murnau): 6 reviews, avg 3.00, max 5, recent holds 6, newest 2024-03-19",
        "film 3 The Cabinet of Dr. Caligari (Robert Wiene): 6 reviews, avg 2.83, max 5, recent holds 6, newest 2024-03-24",
        "2. review 7 (film 1's newest, 2024-03-25) deleted; review 8 of film 2 re-rated 5 -> 2",
        "film 1: 12 reviews, avg 3.17, max 5, recent holds 10, newest 2024-03-23 (review 15 of 2024-03-06 came back in)",
        "film 2: 6 reviews, avg 2.50 (was 3.00), max 4 (was 5), its subset shows the new rating",
        "16 concurrent tasks record views: film 1 4000, film 2 592, film 3 120 (4712 increments, 46 writes)",
        "stored before flush: film 1 4000, film 2 500, film 3 100 (multiples of 100)",
        "flush wrote 112 views; stored after flush: film 1 4000, film 2 592, film 3 120 (exact)",
        "4. a foreign tool deletes review 18 of film 3 (rating 5) directly through the store",
        "verify: film 3 review_count: stored 6, computed 5",
        "verify: film 3 rating_sum: stored 17, computed 12",
        "verify: film 3 rating_avg: stored 2.83",
        "verify: film 3 rating_max: stored 5, computed 4",
        "verify_subsets: films [\"3\"]",
        "after recompute and resubset of film 3: verify 0 drifts, verify_subsets 0 films",
        "film 3: 5 reviews, avg 2.40, max 4, recent holds 5, newest 2024-03-24, views 120",
        "5. Director::update_one: director 1's photo changed, director 2 renamed F. W. Murnau -> Friedrich Wilhelm Murnau",
        r#"film 1 Metropolis: {"_id":1,"name":"Fritz Lang","photo":"https://example.com/directors/fritz-lang-1927.jpg"}"#,
        r#"film 2 Nosferatu: {"_id":2,"name":"Friedrich Wilhelm Murnau","photo":"https://example.com/directors/f-w-murnau.jpg"}"#,
        r#"film 3 The Cabinet of Dr. Caligari: {"_id":3,"name":"Robert Wiene","photo":"https://example.com/directors/robert-wiene.jpg"}"#,
        r#"film 4 M: {"_id":1,"name":"Fritz Lang","photo":"https://example.com/directors/fritz-lang-1927.jpg"}"#,
        "every film's copy equals its director; verify_copies: []",
        "delete of director 3 refused: StillReferenced by films.director (film 3), nothing deleted",
        "film catalogue: aggregates, subsets, view counts and director copies exact",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
}

#[test]
fn film_catalogue_in_memory() {
    check_film_catalogue(
        &run(env!("CARGO_BIN_EXE_film_catalogue"), false),
        "in-memory",
    );
}

#[test]
fn film_catalogue_on_mongodb() {
    check_film_catalogue(&run(env!("CARGO_BIN_EXE_film_catalogue"), true), "MongoDB");
}

fn check_product_catalogue(out: &str, store: &str) {
    assert!(out.contains(&format!("store: {store}")), "{out}");
    for line in [
        "1. inserted 6 products: 2 books, 2 shirts, 2 cables",
        r#"{"_id":1,"kind":"book","name":"Moby-Dick","price":12,"author":"Herman Melville","isbn":"isbn-1"}"#,
        r#"{"_id":5,"kind":"cable","name":"USB-C 2 m","price":9,"specs":[{"k":"amps","v":10},{"k":"metres","v":2}]}"#,
        "shirt 4 Flannel (L)",
        "price >= 20: [2, 3, 4]",
        r#"3. shirts: ["Oxford", "Flannel"]; Book::get(3): None (3 is a shirt)"#,
        "4. set size XL on _id 1 (a book): false; on _id 3 (a shirt): true",
        "5. cables with amps >= 10: [5]; of 1 to 5 metres: [5]",
        "6. save of book 4 over shirt 4: refused (OtherVariant: stored shirt, written book)",
        r#"change_variant: true; product 4 as stored: {"_id":4,"kind":"book","name":"Dubliners","price":15,"author":"James Joyce","isbn":"isbn-4"}"#,
        "has `kind: hat`: not one of this program's variants",
        "skip_unknown_variants: 6 products; Book::find: 3 books",
        r#"verify_variants: 90 ("hat"), 91 (none)"#,
        "8. indexes of products: _id_, isbn_1_kind_book, pattern_attributes_specs_kind_cable, size_1_kind_shirt",
        "product catalogue: each variant read and written alone, nothing across variants",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
}

#[test]
fn product_catalogue_in_memory() {
    check_product_catalogue(
        &run(env!("CARGO_BIN_EXE_product_catalogue"), false),
        "in-memory",
    );
}

#[test]
fn product_catalogue_on_mongodb() {
    check_product_catalogue(
        &run(env!("CARGO_BIN_EXE_product_catalogue"), true),
        "MongoDB",
    );
}
