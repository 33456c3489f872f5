//! Shared support for the integration and conformance tests (and the benchmarks): the MongoDB
//! test server, one database per test, the one command monitor (the driver's command
//! monitoring, handshakes aside) every count and record of commands goes through, the soak
//! tests' scale, and the macro that runs one suite unchanged against both stores.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use bson::{Bson, Document};
use mongodb::event::command::CommandEvent;
use mongodb::event::EventHandler;
use mongodb::options::ClientOptions;
use pattern_core::adopt::{Options, Progress};
use pattern_core::store::query::{Filter, FindOptions};
use pattern_core::store::{AnyStore, MongoStore};
use pattern_core::{store::Store, MemoryStore};

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

/// A soak test's size: `short` by default (the README's test command), `full` with
/// `PATTERN_FULL=1` (any value but empty or `0`). Short first, unlike `pattern_bench::scale`. A
/// test's own variable, where it has one, overrides both.
pub fn scale(short: u32, full: u32) -> u32 {
    match std::env::var("PATTERN_FULL") {
        Ok(v) if !v.is_empty() && v != "0" => full,
        _ => short,
    }
}

/// A seeded xorshift generator: `next(n)` is in `0..n`, the same sequence for one seed on every
/// run (the oracles' random operations).
pub fn rng(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
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

/// Client options for `$MONGODB_URI` (a panic that says how to get a server without it), with
/// server selection bounded at 20 s unless the connection string says otherwise.
pub async fn client_options() -> ClientOptions {
    let mut opts = ClientOptions::parse(mongo_uri())
        .await
        .expect("MONGODB_URI does not parse");
    opts.server_selection_timeout
        .get_or_insert(std::time::Duration::from_secs(20));
    opts
}

/// A MongoDB store on a fresh database for `test`.
pub async fn mongo_store(test: &str) -> MongoStore {
    MongoStore::with_options(client_options().await, &unique_db(test)).expect("client")
}

/// Another client on `store`'s database: a second process, as far as the stores can tell
/// (each remembers only what its own pushes saw).
pub async fn second_client(store: &MongoStore) -> MongoStore {
    MongoStore::with_options(client_options().await, store.database().name()).expect("client")
}

/// Whether a command carries data: not one of the driver's handshakes, authentication or
/// monitoring commands, which no count or record of the tests and benchmarks includes.
pub fn carries_data(command: &str) -> bool {
    !matches!(
        command,
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

/// The command monitor every count and record of commands goes through (the tests' and the
/// benchmarks'): the client of `opts` passes each event (started, succeeded, failed) of every
/// command that [carries data](carries_data) to `on_command`.
pub fn monitor(
    opts: &mut ClientOptions,
    on_command: impl Fn(CommandEvent) + Send + Sync + 'static,
) {
    opts.command_event_handler = Some(EventHandler::callback(move |ev: CommandEvent| {
        let name = match &ev {
            CommandEvent::Started(e) => &e.command_name,
            CommandEvent::Succeeded(e) => &e.command_name,
            CommandEvent::Failed(e) => &e.command_name,
            _ => return,
        };
        if carries_data(name) {
            on_command(ev);
        }
    }));
}

/// A MongoDB store on a fresh database for `test`, whose client passes the events of every
/// command that carries data to `on_command` ([`monitor`]).
pub async fn monitored_mongo_store(
    test: &str,
    on_command: impl Fn(CommandEvent) + Send + Sync + 'static,
) -> MongoStore {
    let mut opts = client_options().await;
    monitor(&mut opts, on_command);
    MongoStore::with_options(opts, &unique_db(test)).expect("client")
}

/// The commands a client sent, by name, as its command monitoring saw them.
#[derive(Clone, Debug, Default)]
pub struct CommandLog(Arc<Mutex<Vec<String>>>);

impl CommandLog {
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

/// Whether `command` (its body, as sent) is on the library's collection marks
/// (`pattern_bounded`): a mark's write is one a test of a method's round trips tells apart,
/// such as a time-named collection's width growing (`series::width`).
pub fn on_marks(name: &str, command: &Document) -> bool {
    command.get_str(name) == Ok(pattern_core::spec::BOUNDED_COLLECTIONS)
}

/// A MongoDB store on a fresh database, with a log of every command its client sends (a
/// command on the collection marks logged as `<name> pattern_bounded`, [`on_marks`]).
pub async fn counted_mongo_store(test: &str) -> (MongoStore, CommandLog) {
    let log = CommandLog::default();
    let sink = log.clone();
    let store = monitored_mongo_store(test, move |ev| {
        if let CommandEvent::Started(s) = ev {
            let name = match on_marks(&s.command_name, &s.command) {
                true => format!(
                    "{} {}",
                    s.command_name,
                    pattern_core::spec::BOUNDED_COLLECTIONS
                ),
                false => s.command_name,
            };
            sink.0.lock().unwrap().push(name);
        }
    })
    .await;
    (store, log)
}

/// A MongoDB store on a fresh database, with every command its client sends (name, body),
/// the driver's handshakes and monitoring aside: to count round trips and explain the very
/// queries a method sent.
pub async fn recording_mongo_store(
    test: &str,
) -> (MongoStore, Arc<Mutex<Vec<(String, Document)>>>) {
    let log: Arc<Mutex<Vec<(String, Document)>>> = Arc::default();
    let sink = log.clone();
    let store = monitored_mongo_store(test, move |ev| {
        if let CommandEvent::Started(s) = ev {
            sink.lock().unwrap().push((s.command_name, s.command));
        }
    })
    .await;
    (store, log)
}

/// A MongoDB store on a fresh database whose every command is recorded compacted
/// ([`compact_command`]): what the conformance suites run on, for the targeting check. The store
/// runs as behind a `mongos` ([`MongoStore::with_routing`]).
pub async fn targeted_mongo_store(test: &str) -> (MongoStore, Recorder) {
    let log: Recorder = Arc::default();
    let sink = log.clone();
    let store = monitored_mongo_store(test, move |ev| {
        if let CommandEvent::Started(s) = ev {
            let cmd = compact_command(&s.command_name, &s.command);
            sink.lock().unwrap().push((s.command_name, cmd));
        }
    })
    .await;
    // The library as it runs behind a `mongos`: what the check judges is what a sharded
    // cluster would be sent.
    (store.with_routing(true), log)
}

/// Drops a test's database (best effort: the test server's storage is temporary anyway).
pub async fn drop_db(store: &AnyStore) {
    if let AnyStore::Mongo(m) = store {
        let _ = m.database().drop().await;
    }
}

/// Find options of a test's own read (not the library's: the targeting check passes over it).
pub fn read_back() -> FindOptions {
    FindOptions {
        comment: Some(TEST_READ),
        ..FindOptions::default()
    }
}

/// Every document of a collection in `_id` order, as stored.
pub async fn documents<S: Store>(store: &S, coll: &str) -> Vec<Document> {
    let opts = FindOptions {
        sort: vec![("_id".into(), 1)],
        comment: Some(TEST_READ),
        ..FindOptions::default()
    };
    store
        .find(coll, &Filter::And(vec![]), &opts)
        .await
        .expect("read the collection")
}

/// Options whose progress callback panics, once, when phase `phase` has read `after`
/// documents: a run killed after the batches it recorded (run it in a spawned task).
/// `batch_items` sets the batches.
pub fn dying(phase: &'static str, after: u64, batch_items: usize) -> Options<'static> {
    let armed: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(true)));
    let die: &'static (dyn Fn(&Progress<'_>) + Send + Sync) =
        Box::leak(Box::new(move |p: &Progress<'_>| {
            if p.phase == phase && p.done >= after && armed.swap(false, Ordering::SeqCst) {
                panic!("killed by the test after {} documents", p.done);
            }
        }));
    Options {
        batch_items,
        progress: Some(die),
        ..Options::default()
    }
}

/// The kill switch of the archives between a batch's moves and its checkpoint: with
/// `Some(most)`, a validator on `pattern_migrations` refuses a checkpoint whose `moved` passes
/// `most`, so a run stops with an error at the checkpoint's write after the moves that take
/// it past, the store left as a kill there leaves it; `None` takes the validator off.
pub async fn checkpoint_refuses_moved_past(store: &AnyStore, most: Option<i64>) {
    use pattern_core::store::query::Schema;
    let schema = match most {
        Some(most) => Schema::object().property("moved", Schema::default().range(None, Some(most))),
        None => Schema::default(),
    };
    (store.set_validator(pattern_core::adopt::CHECKPOINTS, &schema))
        .await
        .expect("set the checkpoints' validator");
}

/// Checkpoint `name` of a migration, sweep or archive, if any run wrote it.
pub async fn checkpoint<S: Store>(store: &S, name: &str) -> Option<Document> {
    (documents(store, pattern_core::adopt::CHECKPOINTS).await)
        .into_iter()
        .find(|d| d.get_str("_id") == Ok(name))
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
/// (failing with a message that says how to get a server when there is none). On MongoDB every
/// command the test sends is recorded and checked against the targeting rule for the
/// documented shard keys ([`check_suite_targeting`]); suites of the store contract itself,
/// whose tests send whatever commands they test, list their tests after `untargeted:`.
#[macro_export]
macro_rules! on_both_stores {
    (untargeted: $($name:ident),* $(,)?) => {
        $crate::on_both_stores!(@suite false; $($name),*);
    };
    (@suite $check:expr; $($name:ident),*) => {
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
                    let (m, log) = $crate::targeted_mongo_store(stringify!($name)).await;
                    let store = ::pattern_core::store::AnyStore::Mongo(m.clone());
                    super::$name(store.clone()).await;
                    if $check {
                        let log = ::std::mem::take(&mut *log.lock().unwrap());
                        $crate::check_suite_targeting(
                            stringify!($name),
                            m.database().name(),
                            &::pattern_core::__private::__trees_served(&m),
                            &log,
                        );
                    }
                    $crate::drop_db(&store).await;
                }
            )*
        }
    };
    ($($name:ident),* $(,)?) => {
        $crate::on_both_stores!(@suite true; $($name),*);
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

pub mod advise;
mod targeting;
pub use targeting::{
    check_suite_targeting, command_reach, command_targets, compact_command, declare_unsharded,
    filter_targets, targeting, Reach, Recorder, Targeting, Targets, TEST_READ,
};
