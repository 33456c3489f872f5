//! The `pattern` command end to end, against the server in `MONGODB_URI` (a test that needs
//! one fails, saying how to get one, when it is unset): each test on its own database, dropped
//! at the end. One module per subcommand or topic; the shared helpers in [`support`].

mod advise;
mod analyze;
mod archive;
mod convert;
mod errors;
mod follow;
mod getting_started;
mod indexes;
mod logs;
mod migrate;
mod migrate_bucket;
mod migrate_outlier;
mod support;
mod verify;
