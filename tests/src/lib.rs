//! Shared support for the integration and conformance tests: the MongoDB test server, one
//! database per test, command counting with the driver's command monitoring, and the macro
//! that runs one suite unchanged against both stores.

use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use bson::{Bson, Document};
use mongodb::event::command::CommandEvent;
use mongodb::event::EventHandler;
use mongodb::options::ClientOptions;
use pattern_core::query::{Filter, FindOptions};
use pattern_core::{AnyStore, MemoryStore, MongoStore, Store};

/// How to get a server, for the failure message of tests that need one.
pub const NO_SERVER: &str = "this test needs a MongoDB server and MONGODB_URI is not set. \
Run the test command `scripts/test.sh`, which installs and starts the SecantusDB test server \
(cargo install secantus-mdb --version 0.5.3-beta.196 --ignore-rust-version --locked) and sets \
MONGODB_URI, or point MONGODB_URI at a mongod or Atlas cluster of your own.";

/// `$MONGODB_URI`, or a panic that says how to get a server (never a silent skip).
pub fn mongo_uri() -> String {
    match std::env::var("MONGODB_URI") {
        Ok(uri) if !uri.trim().is_empty() => uri,
        _ => panic!("{NO_SERVER}"),
    }
}

/// A database name unique to this test run (at most 63 bytes).
pub fn unique_db(test: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut name: String = test
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(40)
        .collect();
    name = format!("pt_{name}_{:x}", nanos & 0xffff_ffff_ffff);
    name.truncate(63);
    name
}

async fn options() -> ClientOptions {
    let mut opts = ClientOptions::parse(mongo_uri())
        .await
        .expect("MONGODB_URI does not parse");
    opts.server_selection_timeout
        .get_or_insert(std::time::Duration::from_secs(20));
    opts
}

/// A MongoDB store on a fresh database for `test`.
pub async fn mongo_store(test: &str) -> MongoStore {
    MongoStore::with_options(options().await, &unique_db(test)).expect("client")
}

/// Another client on `store`'s database: a second process, as far as the stores can tell
/// (each remembers only what its own pushes saw).
pub async fn second_client(store: &MongoStore) -> MongoStore {
    MongoStore::with_options(options().await, store.database().name()).expect("client")
}

/// The commands a client sent, by name, as its command monitoring saw them.
#[derive(Clone, Debug, Default)]
pub struct CommandLog(Arc<Mutex<Vec<String>>>);

impl CommandLog {
    /// Commands that carry data (not the driver's handshakes and monitoring).
    fn counts(name: &str) -> bool {
        !matches!(
            name,
            "hello"
                | "isMaster"
                | "ismaster"
                | "ping"
                | "buildInfo"
                | "buildinfo"
                | "endSessions"
                | "saslStart"
                | "saslContinue"
        )
    }
    /// Forgets what was logged.
    pub fn clear(&self) {
        self.0.lock().unwrap().clear();
    }
    /// The commands since the last `clear`.
    pub fn names(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
    /// How many commands since the last `clear`.
    pub fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
    /// Whether no command was sent since the last `clear`.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// How many of them were `name`.
    pub fn count(&self, name: &str) -> usize {
        self.0.lock().unwrap().iter().filter(|n| *n == name).count()
    }
}

/// A MongoDB store on a fresh database, with a log of every command its client sends.
pub async fn counted_mongo_store(test: &str) -> (MongoStore, CommandLog) {
    let log = CommandLog::default();
    let sink = log.clone();
    let mut opts = options().await;
    opts.command_event_handler = Some(EventHandler::callback(move |ev: CommandEvent| {
        if let CommandEvent::Started(s) = ev {
            if CommandLog::counts(&s.command_name) {
                sink.0.lock().unwrap().push(s.command_name);
            }
        }
    }));
    (
        MongoStore::with_options(opts, &unique_db(test)).expect("client"),
        log,
    )
}

/// A MongoDB store on a fresh database, with every command its client sends (name, body),
/// the driver's handshakes and monitoring aside: to count round trips and explain the very
/// queries a method sent.
pub async fn recording_mongo_store(
    test: &str,
) -> (MongoStore, Arc<Mutex<Vec<(String, Document)>>>) {
    let log: Arc<Mutex<Vec<(String, Document)>>> = Arc::default();
    let sink = log.clone();
    let mut opts = options().await;
    opts.command_event_handler = Some(EventHandler::callback(move |ev: CommandEvent| {
        if let CommandEvent::Started(s) = ev {
            if CommandLog::counts(&s.command_name) {
                sink.lock().unwrap().push((s.command_name, s.command));
            }
        }
    }));
    (
        MongoStore::with_options(opts, &unique_db(test)).expect("client"),
        log,
    )
}

/// Drops a test's database (best effort: the test server's storage is temporary anyway).
pub async fn drop_db(store: &AnyStore) {
    if let AnyStore::Mongo(m) = store {
        let _ = m.database().drop().await;
    }
}

/// Every document of a collection in `_id` order, as stored.
pub async fn documents<S: Store>(store: &S, coll: &str) -> Vec<Document> {
    let opts = FindOptions {
        sort: vec![("_id".into(), 1)],
        ..FindOptions::default()
    };
    store
        .find(coll, &Filter::And(vec![]), &opts)
        .await
        .expect("read the collection")
}

/// A document with its fields sorted by name, recursively: stores may order the fields an
/// upsert creates differently, and field order carries no meaning for the patterns.
pub fn canonical(doc: &Document) -> Document {
    let mut keys: Vec<&String> = doc.keys().collect();
    keys.sort();
    keys.into_iter()
        .map(|k| (k.clone(), canonical_bson(&doc[k])))
        .collect()
}

fn canonical_bson(b: &Bson) -> Bson {
    match b {
        Bson::Document(d) => Bson::Document(canonical(d)),
        Bson::Array(a) => Bson::Array(a.iter().map(canonical_bson).collect()),
        Bson::Int32(x) => Bson::Int64(*x as i64),
        other => other.clone(),
    }
}

/// Asserts two document lists are equal up to field order and integer width.
pub fn assert_same_documents(actual: &[Document], expected: &[Document]) {
    let a: Vec<Document> = actual.iter().map(canonical).collect();
    let e: Vec<Document> = expected.iter().map(canonical).collect();
    assert_eq!(a, e, "\nactual:   {actual:#?}\nexpected: {expected:#?}");
}

/// A new in-memory store.
pub fn memory_store() -> AnyStore {
    AnyStore::Memory(MemoryStore::new())
}

/// Runs each listed `async fn(AnyStore)` of the calling module against both stores:
/// `memory::<name>` on a new in-memory store, `mongo::<name>` on a fresh MongoDB database
/// (failing with a message that says how to get a server when there is none).
#[macro_export]
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name($crate::memory_store()).await;
                }
            )*
        }
        mod mongo {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let store = ::pattern_core::AnyStore::Mongo($crate::mongo_store(stringify!($name)).await);
                    super::$name(store.clone()).await;
                    $crate::drop_db(&store).await;
                }
            )*
        }
    };
}

/// An integer stored as Int32, Int64 or an integral Double (as the stores read counts and
/// numbers).
pub fn as_int(v: &Bson) -> Option<i64> {
    match v {
        Bson::Int32(x) => Some(i64::from(*x)),
        Bson::Int64(x) => Some(*x),
        Bson::Double(x) if x.fract() == 0.0 && x.abs() < 9.2e18 => Some(*x as i64),
        _ => None,
    }
}

/// Where a command would go on a cluster whose collections are sharded by `keys`, by
/// MongoDB's targeting rule: a filter (or an inserted document) holding an equality on the
/// shard key goes to one shard, a `$in` on it to the shards of those values, anything else to
/// every shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Targets {
    /// One shard: an equality on the shard key.
    One,
    /// The shards owning the listed values (`$in` on the shard key).
    Listed,
    /// Every shard (scatter-gather): no condition on the shard key.
    All,
}

/// How a filter targets on shard key `field`.
pub fn filter_targets(filter: &Document, field: &str) -> Targets {
    let mut best = Targets::All;
    if let Some(v) = filter.get(field) {
        best = match v {
            Bson::Document(ops) if ops.keys().any(|k| k.starts_with('$')) => {
                if ops.contains_key("$eq") {
                    Targets::One
                } else if ops.contains_key("$in") {
                    Targets::Listed
                } else {
                    Targets::All
                }
            }
            _ => Targets::One,
        };
    }
    if let Ok(all) = filter.get_array("$and") {
        for f in all.iter().filter_map(Bson::as_document) {
            best = best.min(filter_targets(f, field));
        }
    }
    best
}

/// The collections a data command touches and how each of its filters or documents targets,
/// for collections sharded by `keys` (`(collection, field)`); commands on other collections,
/// and commands that carry no data (`getMore`, `commitTransaction`, index commands...), give
/// nothing.
pub fn command_targets(
    name: &str,
    cmd: &Document,
    keys: &[(String, String)],
) -> Vec<(String, Targets)> {
    let key_of = |coll: &str| keys.iter().find(|(c, _)| c == coll).map(|(_, f)| f.clone());
    let mut out = Vec::new();
    let coll = cmd.get_str(name).unwrap_or("").to_owned();
    let field = key_of(&coll);
    match (name, field) {
        ("find" | "count", Some(f)) => {
            let filter = cmd
                .get_document("filter")
                .or_else(|_| cmd.get_document("query"));
            let t = filter.map_or(Targets::All, |q| filter_targets(q, &f));
            out.push((coll, t));
        }
        ("findAndModify", Some(f)) => {
            let t = cmd
                .get_document("query")
                .map_or(Targets::All, |q| filter_targets(q, &f));
            out.push((coll, t));
        }
        ("update", Some(f)) => {
            for u in cmd
                .get_array("updates")
                .into_iter()
                .flatten()
                .filter_map(Bson::as_document)
            {
                let t = u
                    .get_document("q")
                    .map_or(Targets::All, |q| filter_targets(q, &f));
                out.push((coll.clone(), t));
            }
        }
        ("delete", Some(f)) => {
            for d in cmd
                .get_array("deletes")
                .into_iter()
                .flatten()
                .filter_map(Bson::as_document)
            {
                let t = d
                    .get_document("q")
                    .map_or(Targets::All, |q| filter_targets(q, &f));
                out.push((coll.clone(), t));
            }
        }
        ("insert", Some(f)) => {
            for d in cmd
                .get_array("documents")
                .into_iter()
                .flatten()
                .filter_map(Bson::as_document)
            {
                let t = if d.contains_key(&f) {
                    Targets::One
                } else {
                    Targets::All
                };
                out.push((coll.clone(), t));
            }
        }
        ("aggregate", Some(f)) => {
            let first = cmd
                .get_array("pipeline")
                .ok()
                .and_then(|p| p.first())
                .and_then(Bson::as_document)
                .and_then(|s| s.get_document("$match").ok());
            out.push((coll, first.map_or(Targets::All, |m| filter_targets(m, &f))));
        }
        ("bulkWrite", _) => {
            let ns: Vec<String> = cmd
                .get_array("nsInfo")
                .into_iter()
                .flatten()
                .filter_map(Bson::as_document)
                .map(|n| {
                    let full = n.get_str("ns").unwrap_or("");
                    full.split_once('.').map_or(full, |(_, c)| c).to_owned()
                })
                .collect();
            for op in cmd
                .get_array("ops")
                .into_iter()
                .flatten()
                .filter_map(Bson::as_document)
            {
                let (idx, t) = if let Ok(i) = op.get_i32("insert") {
                    let c = ns.get(i as usize).cloned().unwrap_or_default();
                    let Some(f) = key_of(&c) else { continue };
                    let t = op.get_document("document").map_or(Targets::All, |d| {
                        if d.contains_key(&f) {
                            Targets::One
                        } else {
                            Targets::All
                        }
                    });
                    (c, t)
                } else {
                    let i = op
                        .get_i32("update")
                        .or_else(|_| op.get_i32("delete"))
                        .unwrap_or(0);
                    let c = ns.get(i as usize).cloned().unwrap_or_default();
                    let Some(f) = key_of(&c) else { continue };
                    (
                        c,
                        op.get_document("filter")
                            .map_or(Targets::All, |q| filter_targets(q, &f)),
                    )
                };
                out.push((idx, t));
            }
        }
        _ => {}
    }
    out
}
