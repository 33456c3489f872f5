//! Sends the patterns' spans to an OpenTelemetry collector over OTLP (HTTP/protobuf), as the
//! observability chapter (`guide::observability`) shows: `tracing-opentelemetry` turns each
//! operation's `tracing` span into an OpenTelemetry span with the database attributes, under
//! the application's own span.
//!
//! The workload: a request span `checkout` that pushes three trades into a customer's buckets,
//! reads a week of them, inserts a customer and inserts it again (a duplicate key: that span
//! carries `error.type`).
//!
//! With the feature `otlp`, the spans go to `OTEL_EXPORTER_OTLP_ENDPOINT`
//! (`http://localhost:4318` by default: an OpenTelemetry Collector, Jaeger or Grafana Tempo with
//! OTLP/HTTP on). With none listening, the spans are dropped and the program still succeeds.
//! Without the feature, they are kept in memory and printed. The store is in memory by default;
//! on MongoDB (database `pattern_examples`) when `MONGODB_URI` is set:
//!
//!     cargo run -p examples --bin observe --features otlp
//!     cargo run -p examples --bin observe

use bson::DateTime;
use futures::TryStreamExt;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanExporter};
use opentelemetry_sdk::Resource;
use pattern_core::store::AnyStore;
use pattern_core::{Bucket, Document};
use serde::{Deserialize, Serialize};
use tracing::Instrument;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;

/// One trade.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Trade {
    ticker: String,
    qty: i64,
    date: DateTime,
}

/// A customer's trades, 10 a bucket, with their time bounds.
#[derive(Bucket)]
#[bucket(collection = "observed_trades", size = 10, time = "date")]
#[allow(dead_code)]
struct Trades {
    #[bucket(key)]
    customer: i64,
    #[bucket(items)]
    trades: Vec<Trade>,
}

/// A customer.
#[derive(Document, Serialize, Deserialize)]
#[document(collection = "observed_customers")]
struct Customer {
    #[serde(rename = "_id")]
    id: i64,
    name: String,
}

/// The tracer provider: `exporter` behind a batch processor (one background thread sends the
/// spans in batches, off the operations' path), the service named `observe-example`.
fn tracer_provider(exporter: impl SpanExporter + 'static) -> SdkTracerProvider {
    SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            Resource::builder()
                .with_service_name("observe-example")
                .build(),
        )
        .build()
}

/// The subscriber: the library's spans (target `pattern_core`, `INFO`) and the application's,
/// each one an OpenTelemetry span of `provider`'s tracer.
fn subscriber(provider: &SdkTracerProvider) -> impl tracing::Subscriber + Send + Sync {
    let otel = tracing_opentelemetry::layer().with_tracer(provider.tracer("observe-example"));
    tracing_subscriber::registry().with(otel).with(
        Targets::new()
            .with_target("pattern_core", LevelFilter::INFO)
            .with_target("observe", LevelFilter::INFO),
    )
}

/// The workload, inside the application's span `checkout`. Returns what it did, to print.
async fn workload(store: &AnyStore) -> pattern_core::Result<String> {
    store.drop_collection("observed_trades").await?;
    store.drop_collection("observed_customers").await?;
    let at = |s: &str| DateTime::parse_rfc3339_str(s).expect("a valid date");
    async {
        for (qty, date) in [
            (419, "2023-10-26T15:47:03Z"),
            (29, "2023-10-30T09:32:57Z"),
            (42, "2023-11-02T11:43:10Z"),
        ] {
            let trade = Trade {
                ticker: "MDB".into(),
                qty,
                date: at(date),
            };
            Trades::push(store, &123, trade).await?;
        }
        let week = at("2023-10-29T00:00:00Z")..at("2023-11-05T00:00:00Z");
        let in_week: Vec<Trade> = Trades::range(store, &123, week).try_collect().await?;
        let customer = Customer {
            id: 123,
            name: "Ada".into(),
        };
        customer.insert(store).await?;
        let again = customer.insert(store).await;
        Ok(format!(
            "{} trades in the week; inserting customer 123 again: {}",
            in_week.len(),
            again.err().map(|e| e.kind_name()).unwrap_or("no error")
        ))
    }
    .instrument(tracing::info_span!("checkout", "customer" = 123))
    .await
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // With the feature `otlp`: OTLP over HTTP to $OTEL_EXPORTER_OTLP_ENDPOINT
    // (http://localhost:4318 when unset). Without it: kept in memory, printed at the end.
    #[cfg(feature = "otlp")]
    let provider = tracer_provider(
        opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .build()?,
    );
    #[cfg(not(feature = "otlp"))]
    let kept = opentelemetry_sdk::trace::InMemorySpanExporter::default();
    #[cfg(not(feature = "otlp"))]
    let provider = tracer_provider(kept.clone());
    let _guard = tracing::subscriber::set_default(subscriber(&provider));

    let store = AnyStore::from_env("pattern_examples").await?;
    println!("store: {}", store.kind());
    println!("{}", workload(&store).await?);

    // Sends what the batch holds before the program exits. With no collector listening the
    // export fails: the spans are lost, the program's work is not.
    if let Err(e) = provider.force_flush() {
        println!("spans not sent: {e}");
    }
    #[cfg(not(feature = "otlp"))]
    for span in kept.get_finished_spans()? {
        let attributes: Vec<String> = span
            .attributes
            .iter()
            .map(|kv| format!("{}={}", kv.key, kv.value))
            .collect();
        println!("span {}: {}", span.name, attributes.join(" "));
    }
    if let Err(e) = provider.shutdown() {
        println!("spans not sent: {e}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The example's spans, read back from OpenTelemetry's in-memory exporter, in memory and
    //! on MongoDB.

    use super::*;
    use opentelemetry::trace::{SpanId, Status};
    use opentelemetry::Value;
    use opentelemetry_sdk::trace::{InMemorySpanExporter, SpanData};

    fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
        span.attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| &kv.value)
    }

    fn text(span: &SpanData, key: &str) -> String {
        attribute(span, key)
            .map(|v| v.as_str().into_owned())
            .unwrap_or_default()
    }

    fn number(span: &SpanData, key: &str) -> i64 {
        match attribute(span, key) {
            Some(Value::I64(n)) => *n,
            other => panic!("{key} of {} is {other:?}", span.name),
        }
    }

    async fn spans_of(store: &AnyStore) -> Vec<SpanData> {
        let exporter = InMemorySpanExporter::default();
        let provider = tracer_provider(exporter.clone());
        {
            let _guard = tracing::subscriber::set_default(subscriber(&provider));
            let done = workload(store).await.expect("the workload");
            assert_eq!(
                done,
                "2 trades in the week; inserting customer 123 again: DuplicateKey"
            );
        }
        provider.force_flush().expect("flush");
        exporter.get_finished_spans().expect("the spans")
    }

    async fn check(store: AnyStore, system: &str, namespace: &str) {
        let spans = spans_of(&store).await;
        let checkout = spans
            .iter()
            .find(|s| s.name == "checkout")
            .expect("the application's span");
        assert_eq!(checkout.parent_span_id, SpanId::INVALID);
        let named = |name: &str| spans.iter().filter(|s| s.name == name).collect::<Vec<_>>();

        // Every library span is a child of the request's, in its trace, with the attributes.
        let pushes = named("bucket.push");
        assert_eq!(
            pushes.len(),
            3,
            "{:?}",
            spans.iter().map(|s| &s.name).collect::<Vec<_>>()
        );
        for span in pushes
            .iter()
            .chain(&named("bucket.range"))
            .chain(&named("document.insert"))
        {
            assert_eq!(
                span.parent_span_id,
                checkout.span_context.span_id(),
                "{}",
                span.name
            );
            assert_eq!(
                span.span_context.trace_id(),
                checkout.span_context.trace_id()
            );
            assert_eq!(text(span, "db.system.name"), system);
            assert_eq!(text(span, "db.namespace"), namespace);
            assert!(number(span, "pattern.commands") >= 1, "{}", span.name);
        }
        let push = pushes[0];
        assert_eq!(text(push, "db.collection.name"), "observed_trades");
        assert_eq!(text(push, "db.operation.name"), "push");
        assert!(number(push, "pattern.documents") >= 1);
        assert!(attribute(push, "error.type").is_none());

        let range = named("bucket.range");
        assert_eq!(range.len(), 1);
        assert_eq!(text(range[0], "db.operation.name"), "range");

        // The second insert failed: its span says how, the first does not.
        let inserts = named("document.insert");
        assert_eq!(inserts.len(), 2);
        assert_eq!(text(inserts[0], "db.collection.name"), "observed_customers");
        assert!(attribute(inserts[0], "error.type").is_none());
        assert_eq!(text(inserts[1], "error.type"), "DuplicateKey");
        assert_eq!(inserts[0].status, Status::Unset);
        assert!(
            matches!(inserts[1].status, Status::Error { .. }),
            "{:?}",
            inserts[1].status
        );
    }

    #[tokio::test]
    async fn spans_in_memory() {
        check(
            AnyStore::Memory(pattern_core::MemoryStore::new()),
            "memory",
            "",
        )
        .await;
    }

    #[tokio::test]
    async fn spans_on_mongodb() {
        let uri = std::env::var("MONGODB_URI").ok().filter(|u| !u.trim().is_empty()).unwrap_or_else(|| {
            panic!(
                "this test needs a MongoDB server and MONGODB_URI is not set: run scripts/test.sh, which installs \
                 and starts the SecantusDB test server, or point MONGODB_URI at a mongod or Atlas cluster"
            )
        });
        let store = pattern_core::store::MongoStore::connect(&uri, "pattern_examples_observe")
            .await
            .expect("connect");
        let store = AnyStore::Mongo(store);
        check(store, "mongodb", "pattern_examples_observe").await;
    }
}
