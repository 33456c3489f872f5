//! The driver's errors as the library's: unreachable, transient (a write conflict), a
//! duplicate key, a validator's refusal, a server error.

use mongodb::error::{ErrorKind, WriteFailure, TRANSIENT_TRANSACTION_ERROR};

use pattern_store::Error;

pub(crate) fn server_code(e: &mongodb::error::Error) -> Option<i32> {
    match &*e.kind {
        ErrorKind::Command(c) => Some(c.code),
        ErrorKind::Write(WriteFailure::WriteError(w)) => Some(w.code),
        ErrorKind::Write(WriteFailure::WriteConcernError(w)) => Some(w.code),
        _ => None,
    }
}

/// Maps a driver error to the library's error, for collection `coll`.
///
/// An error labelled `TransientTransactionError` (a write conflict, code 112; a transaction
/// the server aborted, NoSuchTransaction, 251; ...) is [`Error::WriteConflict`], unless the
/// server could not be reached: the driver labels those too inside a transaction, but a retry
/// of the transaction would only wait for the server again, so they stay
/// [`Error::Unavailable`].
pub(crate) fn map_err(coll: &str, e: mongodb::error::Error) -> Error {
    let message = e.to_string();
    let unavailable = matches!(
        *e.kind,
        ErrorKind::ServerSelection { .. }
            | ErrorKind::ConnectionPoolCleared { .. }
            | ErrorKind::Io(_)
            | ErrorKind::DnsResolve { .. }
    );
    if !unavailable && e.contains_label(TRANSIENT_TRANSACTION_ERROR) {
        return Error::WriteConflict {
            message,
            source: Some(Box::new(e)),
        };
    }
    let code = match &*e.kind {
        ErrorKind::Write(WriteFailure::WriteError(w)) => Some(w.code),
        ErrorKind::Command(c) => Some(c.code),
        // The first document an `insert` of many refused.
        ErrorKind::InsertMany(m) => (m.write_errors.as_ref())
            .and_then(|w| w.first())
            .map(|w| w.code),
        _ => None,
    };
    if let Some(refused) = code.and_then(|code| refused_write(coll, code, &message)) {
        return refused;
    }
    match &*e.kind {
        // Raised by the driver before anything is sent: an argument it cannot encode, or a
        // transaction used out of order (e.g. on a server that has none).
        ErrorKind::InvalidArgument { .. }
        | ErrorKind::BsonSerialization(_)
        | ErrorKind::Transaction { .. } => Error::InvalidInput(message),
        _ if unavailable => Error::Unavailable {
            message,
            source: Some(Box::new(e)),
        },
        _ => Error::Server {
            message,
            source: Some(Box::new(e)),
        },
    }
}

/// MongoDB's DocumentValidationFailure: a collection's validator refused a write.
const DOCUMENT_VALIDATION_FAILURE: i32 = 121;

/// An update pipeline's `$replaceWith` gave a value that is not a document.
const REPLACEMENT_NOT_A_DOCUMENT: i32 = 40228;

/// The error of a write the server refused with `code`: [`refused_write`]'s, or the server's
/// message.
pub(super) fn refused_or_server(coll: &str, code: i32, message: &str) -> Error {
    refused_write(coll, code, message).unwrap_or_else(|| Error::Server {
        message: format!("{message} (code {code})"),
        source: None,
    })
}

/// The typed error of a write the server refused with `code` ([`Error::DuplicateKey`],
/// [`Error::TooLarge`], [`Error::SchemaViolation`], [`Error::Unmet`]); `None` for any other
/// code.
pub(super) fn refused_write(coll: &str, code: i32, message: &str) -> Option<Error> {
    let (collection, message) = (coll.to_owned(), message.to_owned());
    match code {
        11000 | 11001 => Some(Error::DuplicateKey {
            collection,
            message,
        }),
        // BSONObjectTooLarge, and "resulting document after update is larger than 16 MiB".
        10334 | 17419 | 17420 => Some(Error::TooLarge {
            collection,
            message,
        }),
        DOCUMENT_VALIDATION_FAILURE => Some(Error::SchemaViolation {
            collection,
            message,
        }),
        // A `require`d update's pipeline gave its refusal instead of a document.
        REPLACEMENT_NOT_A_DOCUMENT if message.contains(pattern_store::query::UNMET) => {
            Some(Error::Unmet { collection })
        }
        _ => None,
    }
}
