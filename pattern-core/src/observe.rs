//! Tracing of the patterns' operations (feature `tracing`, on by default: with no subscriber,
//! or tracing's no-op one, it adds 0.24–0.27% to an in-memory push; `BENCHMARKS.md` section 12).
//!
//! Each instrumented operation runs in a [`tracing`] span named by its pattern and operation
//! (`bucket.push`, `tree.move_to`: a fixed, low-cardinality name), entered as a child of the
//! caller's current span, with OpenTelemetry's database attributes:
//!
//! | field | value |
//! |---|---|
//! | [`DB_SYSTEM_NAME`] | `"mongodb"` on MongoDB, `"memory"` on the in-memory store ([`Store::system_name`](crate::store::Store::system_name)) |
//! | [`DB_NAMESPACE`] | the database's name (MongoDB; empty in memory) |
//! | [`DB_COLLECTION_NAME`] | the collection the operation addresses |
//! | [`DB_OPERATION_NAME`] | the operation (`push`, `move_to`) |
//! | [`COMMANDS`] | the commands it sent (each store primitive is one; recorded when it ends) |
//! | [`DOCUMENTS`] | the documents those commands returned or wrote |
//! | [`ERROR_TYPE`] | the kind of its error ([`Error::kind_name`](crate::Error::kind_name)), when it fails |
//! | [`OTEL_STATUS_CODE`] | `"ERROR"` when it fails: `tracing-opentelemetry` makes it the span's status |
//!
//! No query text is recorded unless asked for: [`record_query_text`]`(true)` then makes every
//! command a store sends emit a `DEBUG` event (target `pattern_core::query`) in the
//! operation's span, with `db.collection.name`, `db.operation.name` (the command: `find`,
//! `update`...) and `db.query.text` (its filter, as relaxed Extended JSON: values included,
//! so only where they may be logged). A stream (`bucket::items`, `document::Find::stream`)
//! runs in its span each time it is polled, and records its counts when it ends or is
//! dropped. Long operations (migrations, archives, sweeps, propagations) emit an `INFO`
//! event per batch (target `pattern_core::progress`) with `phase` and `done`. With no
//! subscriber, or one not interested in these spans, an operation costs one check of the
//! span's interest and runs as it would without the feature.

use std::future::Future;

pub(crate) use pattern_store::observe::{progress, traced_in, traced_stream, OpSpan};
pub use pattern_store::observe::{
    record_query_text, COMMANDS, DB_COLLECTION_NAME, DB_NAMESPACE, DB_OPERATION_NAME,
    DB_QUERY_TEXT, DB_SYSTEM_NAME, DOCUMENTS, ERROR_TYPE, OTEL_STATUS_CODE,
};

use crate::Result;

/// The span of operation `$op` of a pattern on collection `$coll` of `$store`: written
/// `op_span!(bucket.push, store, coll)` (named `"bucket.push"`, operation `"push"`), or with
/// the name and the operation apart as literals when they differ. A span's name is a constant.
#[cfg(feature = "tracing")]
macro_rules! op_span {
    ($pattern:ident . $op:ident, $store:expr, $coll:expr) => {
        $crate::observe::op_span!(
            concat!(stringify!($pattern), ".", stringify!($op)),
            stringify!($op),
            $store,
            $coll
        )
    };
    ($name:expr, $op:expr, $store:expr, $coll:expr) => {{
        let store = $store;
        tracing::info_span!(
            $name,
            "db.system.name" = store.system_name(),
            "db.namespace" = store.database_name().unwrap_or(""),
            "db.collection.name" = $coll,
            "db.operation.name" = $op,
            "pattern.commands" = tracing::field::Empty,
            "pattern.documents" = tracing::field::Empty,
            "error.type" = tracing::field::Empty,
            "otel.status_code" = tracing::field::Empty,
        )
    }};
}

#[cfg(not(feature = "tracing"))]
macro_rules! op_span {
    ($pattern:ident . $op:ident, $store:expr, $coll:expr) => {{
        let _ = (&$store, &$coll);
    }};
    ($name:expr, $op:expr, $store:expr, $coll:expr) => {{
        let _ = (&$store, &$coll);
    }};
}

/// `$op.await` in `$span` ([`traced_in`]); when no subscriber wants the span, `$op.await` as it
/// is, the future built in place (not moved into a wrapper: the push's future is large, and
/// moving it costs as much as the check saves).
#[cfg(feature = "tracing")]
macro_rules! traced {
    ($span:expr, $op:expr) => {{
        let span: tracing::Span = $span;
        if span.is_disabled() {
            drop(span);
            $op.await
        } else {
            // Boxed: the traced future (the operation's, a task-local scope, the span) stays
            // out of the caller's future, which is then no larger than without the feature.
            Box::pin($crate::observe::traced_in(span, $op)).await
        }
    }};
}

#[cfg(not(feature = "tracing"))]
macro_rules! traced {
    ($span:expr, $op:expr) => {{
        let () = $span;
        $op.await
    }};
}

/// `$op.await` as operation `$pattern.$name` on collection `$coll` of `$store`, in its span:
/// [`op_span!`] then [`traced!`], the shape of most operations.
macro_rules! traced_op {
    ($pattern:ident . $op:ident, $store:expr, $coll:expr, $body:expr) => {
        $crate::observe::traced!(
            $crate::observe::op_span!($pattern.$op, $store, $coll),
            $body
        )
    };
}

pub(crate) use {op_span, traced, traced_op};

/// The one shape of a typed operation over a raw one: in the operation's `span` (named where
/// the operation is, [`op_span!`]: a span's name is a literal), `first` (what the operation
/// needs before it runs: the indexes, the validator, or [`nothing`]), then the raw `op`, its
/// result through `out` (the typed operations decode there), so that the commands of all three
/// and the error of any count in the span.
pub(crate) async fn operation<R, U>(
    span: OpSpan,
    first: impl Future<Output = Result<()>>,
    op: impl Future<Output = Result<R>>,
    out: impl FnOnce(R) -> Result<U>,
) -> Result<U> {
    traced!(span, async move {
        first.await?;
        out(op.await?)
    })
}

/// What an [`operation`] with nothing to do first runs first.
pub(crate) fn nothing() -> std::future::Ready<Result<()>> {
    std::future::ready(Ok(()))
}
