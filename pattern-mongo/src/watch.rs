//! The change feed: a change stream of the database, filtered on the server to the watched
//! collections, each event read as a document and given in the contract's terms.

use std::time::Duration;

use bson::{doc, Bson, Document};
use mongodb::change_stream::event::ResumeToken;
use mongodb::change_stream::ChangeStream;
use mongodb::options::{FullDocumentBeforeChangeType, FullDocumentType};

use pattern_store::{BoxFuture, Change, ChangeFeed, ChangeOp, Error, Result, Watch};

use super::{map_err, server_code, MongoStore};

/// How long the server waits for a change before a `getMore` answers empty: short, so that a
/// follower gathering a batch stops soon after the changes stop coming (a `getMore` in flight
/// cannot be given up without losing its answer). Idle, a feed asks about 40 times a second.
const AWAIT: Duration = Duration::from_millis(25);

/// The server codes of a resume that cannot be made: `InvalidResumeToken` (260),
/// `ChangeStreamFatalError` (280, the token's event is not in the oplog),
/// `ChangeStreamHistoryLost` (286).
const HISTORY_LOST: [i32; 3] = [260, 280, 286];

pub(crate) struct Feed {
    stream: ChangeStream<Document>,
}

pub(crate) async fn open(store: &MongoStore, watch: &Watch) -> Result<Feed> {
    let names: Vec<Bson> = (watch.collections.iter())
        .map(|c| Bson::String(c.clone()))
        .collect();
    let filter = doc! {"$match": {"$or": [
        {"ns.coll": {"$in": names}},
        {"operationType": {"$in": ["dropDatabase", "invalidate"]}},
    ]}};
    let resume = match &watch.resume_after {
        None => None,
        Some(t) => Some(
            bson::from_bson::<ResumeToken>(Bson::Document(t.clone()))
                .map_err(|e| Error::invalid(format!("not a resume token: {e}")))?,
        ),
    };
    let stream = store
        .database()
        .watch()
        .pipeline([filter])
        .full_document(FullDocumentType::UpdateLookup)
        .full_document_before_change(FullDocumentBeforeChangeType::WhenAvailable)
        .max_await_time(AWAIT)
        .resume_after(resume)
        .await
        .map_err(lost)?;
    Ok(Feed {
        stream: stream.with_type::<Document>(),
    })
}

/// [`Error::HistoryLost`] for a resume the server refuses, else the error as any other.
fn lost(e: mongodb::error::Error) -> Error {
    let message = e.to_string();
    let code = server_code(&e);
    if code.is_some_and(|c| HISTORY_LOST.contains(&c))
        || message.contains("resume token")
        || message.contains("resumeAfter")
    {
        return Error::HistoryLost { message };
    }
    map_err("(change stream)", e)
}

impl ChangeFeed for Feed {
    fn next_change(&mut self) -> BoxFuture<'_, Result<Option<Change>>> {
        Box::pin(async move {
            let Some(event) = self.stream.next_if_any().await.map_err(lost)? else {
                return Ok(None);
            };
            Ok(Some(change(event)?))
        })
    }

    fn position(&self) -> Option<Document> {
        let token = self.stream.resume_token()?;
        match bson::to_bson(&token) {
            Ok(Bson::Document(d)) => Some(d),
            _ => None,
        }
    }
}

/// An event in the contract's terms.
fn change(mut event: Document) -> Result<Change> {
    let bad = |what: &str| Error::Server {
        message: format!("a change event without {what}"),
        source: None,
    };
    let token = match event.remove("_id") {
        Some(Bson::Document(t)) => t,
        _ => return Err(bad("a resume token")),
    };
    let op = match event.get_str("operationType") {
        Ok("insert") => ChangeOp::Insert,
        Ok("update") => ChangeOp::Update,
        Ok("replace") => ChangeOp::Replace,
        Ok("delete") => ChangeOp::Delete,
        Ok(other) => ChangeOp::Other(other.to_owned()),
        Err(_) => return Err(bad("an operation type")),
    };
    let collection = (event.get_document("ns").ok())
        .and_then(|ns| ns.get_str("coll").ok())
        .unwrap_or_default()
        .to_owned();
    let id = (event.get_document("documentKey").ok()).and_then(|k| k.get("_id").cloned());
    let image = |event: &mut Document, field: &str| match event.remove(field) {
        Some(Bson::Document(d)) => Some(d),
        _ => None,
    };
    Ok(Change {
        after: image(&mut event, "fullDocument"),
        before: image(&mut event, "fullDocumentBeforeChange"),
        cluster_time: event.get_timestamp("clusterTime").ok(),
        wall_time: event.get_datetime("wallTime").ok().copied(),
        token,
        op,
        collection,
        id,
    })
}
