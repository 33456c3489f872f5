//! What a store reports to the operation that runs it (feature `tracing`; without it every
//! function here does nothing): [`command`] for each command it sends, with the documents that
//! command returned or wrote, and [`query`] with its filter, logged as text only when
//! [`record_query_text`] asked for it. The operations' spans are pattern-core's
//! (`pattern_core::observe` documents them): [`traced_in`] runs one and records its counts in
//! the span's fields ([`COMMANDS`], [`DOCUMENTS`], [`ERROR_TYPE`]); an operation run inside
//! another adds its counts to the outer one's.

use std::future::Future;

use crate::{FromStore, Result};

/// OpenTelemetry's `db.system.name`.
pub const DB_SYSTEM_NAME: &str = "db.system.name";
/// OpenTelemetry's `db.namespace`.
pub const DB_NAMESPACE: &str = "db.namespace";
/// OpenTelemetry's `db.collection.name`.
pub const DB_COLLECTION_NAME: &str = "db.collection.name";
/// OpenTelemetry's `db.operation.name`.
pub const DB_OPERATION_NAME: &str = "db.operation.name";
/// The number of commands an operation sent.
pub const COMMANDS: &str = "pattern.commands";
/// The number of documents its commands returned or wrote.
pub const DOCUMENTS: &str = "pattern.documents";
/// OpenTelemetry's `error.type`.
pub const ERROR_TYPE: &str = "error.type";

/// The span's status for `tracing-opentelemetry` (`"ERROR"` when the operation failed; its
/// convention, which other subscribers see as a plain field).
pub const OTEL_STATUS_CODE: &str = "otel.status_code";

/// Records on `span` that its operation failed with `e`: the error's kind, and the error status
/// `tracing-opentelemetry` gives the span.
#[cfg(feature = "tracing")]
fn failed<E: FromStore>(span: &tracing::Span, e: &E) {
    span.record(ERROR_TYPE, e.kind_name());
    span.record(OTEL_STATUS_CODE, "ERROR");
}

/// A count as a signed integer: the type OpenTelemetry's attributes carry (`tracing-opentelemetry`
/// records an unsigned value as text).
#[cfg(feature = "tracing")]
fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// OpenTelemetry's `db.query.text` (only with [`record_query_text`]).
pub const DB_QUERY_TEXT: &str = "db.query.text";

static QUERY_TEXT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether each command's filter is logged (`db.query.text`, a `DEBUG` event of target
/// `pattern_core::query`): off unless turned on here, for the whole process. The text holds
/// the values the filter compares with. Without the `tracing` feature, nothing is logged.
pub fn record_query_text(on: bool) {
    QUERY_TEXT.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// A command `op` on `coll` is sent with a filter (`filter()` builds it as the server gets
/// it): its text logged when asked for.
#[cfg(feature = "tracing")]
pub fn query(coll: &str, op: &str, filter: impl FnOnce() -> bson::Document) {
    if QUERY_TEXT.load(std::sync::atomic::Ordering::Relaxed) {
        let text = bson::Bson::Document(filter()).into_relaxed_extjson();
        tracing::event!(
            target: "pattern_core::query",
            tracing::Level::DEBUG,
            db.collection.name = coll,
            db.operation.name = op,
            db.query.text = %text
        );
    }
}

/// Without the `tracing` feature: nothing.
#[cfg(not(feature = "tracing"))]
pub fn query(_coll: &str, _op: &str, _filter: impl FnOnce() -> bson::Document) {}

#[cfg(feature = "tracing")]
mod on {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    use tracing::Instrument;

    use super::*;

    /// What an operation's commands did so far.
    #[derive(Default)]
    pub struct Counts {
        commands: AtomicU64,
        documents: AtomicU64,
    }

    tokio::task_local! {
        static COUNTS: Arc<Counts>;
    }

    /// Runs `op` in `span` (unless no subscriber wants it), then records what it sent and how
    /// it ended; an operation run inside another adds its counts to the outer one's.
    pub async fn traced_in<T, E: FromStore>(
        span: tracing::Span,
        op: impl Future<Output = Result<T, E>>,
    ) -> Result<T, E> {
        if span.is_disabled() {
            return op.await;
        }
        let counts = Arc::new(Counts::default());
        let outer = COUNTS.try_with(Arc::clone).ok();
        let out = COUNTS
            .scope(counts.clone(), op.instrument(span.clone()))
            .await;
        let commands = counts.commands.load(Ordering::Relaxed);
        let documents = counts.documents.load(Ordering::Relaxed);
        span.record(COMMANDS, as_i64(commands));
        span.record(DOCUMENTS, as_i64(documents));
        if let Err(e) = &out {
            failed(&span, e);
        }
        if let Some(outer) = outer {
            outer.commands.fetch_add(commands, Ordering::Relaxed);
            outer.documents.fetch_add(documents, Ordering::Relaxed);
        }
        out
    }

    /// A stream run in `span`: each poll entered in it and counted for it; the counts and
    /// the first error recorded when the stream ends or is dropped (a stream read part way
    /// records what it sent so far).
    pub struct TracedStream<St> {
        span: tracing::Span,
        counts: Arc<Counts>,
        outer: Option<Arc<Counts>>,
        inner: std::pin::Pin<Box<St>>,
        recorded: bool,
    }

    impl<St> TracedStream<St> {
        /// `inner` run in `span`, its counts added to the operation running (if any).
        pub fn new(span: tracing::Span, inner: St) -> Self {
            TracedStream {
                span,
                counts: Arc::new(Counts::default()),
                outer: COUNTS.try_with(Arc::clone).ok(),
                inner: Box::pin(inner),
                recorded: false,
            }
        }

        fn record(&mut self) {
            if std::mem::replace(&mut self.recorded, true) {
                return;
            }
            let commands = self.counts.commands.load(Ordering::Relaxed);
            let documents = self.counts.documents.load(Ordering::Relaxed);
            self.span.record(COMMANDS, as_i64(commands));
            self.span.record(DOCUMENTS, as_i64(documents));
            if let Some(outer) = &self.outer {
                outer.commands.fetch_add(commands, Ordering::Relaxed);
                outer.documents.fetch_add(documents, Ordering::Relaxed);
            }
        }
    }

    impl<St, T, E: FromStore> futures::Stream for TracedStream<St>
    where
        St: futures::Stream<Item = Result<T, E>>,
    {
        type Item = Result<T, E>;

        fn poll_next(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<T, E>>> {
            let this = &mut *self;
            let polled = {
                let _entered = this.span.enter();
                let inner = this.inner.as_mut();
                COUNTS.sync_scope(this.counts.clone(), || inner.poll_next(cx))
            };
            match &polled {
                std::task::Poll::Ready(Some(Err(e))) if !this.recorded => failed(&this.span, e),
                std::task::Poll::Ready(None) => this.record(),
                _ => {}
            }
            polled
        }
    }

    impl<St> Drop for TracedStream<St> {
        fn drop(&mut self) {
            self.record();
        }
    }

    /// Counts one command sent by a store for the operation running (if any is traced),
    /// which returned or wrote `documents` documents.
    pub fn command(documents: u64) {
        let _ = COUNTS.try_with(|c| {
            c.commands.fetch_add(1, Ordering::Relaxed);
            c.documents.fetch_add(documents, Ordering::Relaxed);
        });
    }

    /// A progress event of a long operation: `phase`, and how many done so far.
    pub fn progress(phase: &str, done: u64) {
        tracing::info!(target: "pattern_core::progress", phase, done);
    }
}

#[cfg(feature = "tracing")]
pub use on::{command, progress, traced_in, Counts, TracedStream};

/// `stream` run in `span`, as [`traced_in`] runs a future: as it is when no subscriber wants
/// the span.
#[cfg(feature = "tracing")]
pub fn traced_stream<'a, T, E: FromStore>(
    span: tracing::Span,
    stream: impl futures::Stream<Item = Result<T, E>> + Send + 'a,
) -> impl futures::Stream<Item = Result<T, E>> + Send + 'a {
    use futures::future::Either;
    if span.is_disabled() {
        Either::Left(stream)
    } else {
        Either::Right(on::TracedStream::new(span, stream))
    }
}

/// Without the `tracing` feature: the stream as it is.
#[cfg(not(feature = "tracing"))]
pub fn traced_stream<'a, T, E: FromStore>(
    _span: (),
    stream: impl futures::Stream<Item = Result<T, E>> + Send + 'a,
) -> impl futures::Stream<Item = Result<T, E>> + Send + 'a {
    stream
}

/// Without the `tracing` feature: the operation as it is.
#[cfg(not(feature = "tracing"))]
pub async fn traced_in<T, E: FromStore>(
    _span: (),
    op: impl Future<Output = Result<T, E>>,
) -> Result<T, E> {
    op.await
}

/// Without the `tracing` feature: nothing.
#[cfg(not(feature = "tracing"))]
pub fn command(_documents: u64) {}

/// Without the `tracing` feature: nothing.
#[cfg(not(feature = "tracing"))]
pub fn progress(_phase: &str, _done: u64) {}

/// The span of an operation: a `tracing` span, or nothing without the feature.
#[cfg(feature = "tracing")]
pub type OpSpan = tracing::Span;
/// The span of an operation: a `tracing` span, or nothing without the feature.
#[cfg(not(feature = "tracing"))]
pub type OpSpan = ();
