//! `pattern follow`.

use clap::Args;

// Which follower (a plain comment: a doc comment would be clap's `about`).
#[derive(Args, Debug)]
pub(crate) struct Follow {
    /// The follower's name: its document in `pattern_follow`, which the application's
    /// follower wrote with the rules it keeps. Default: the only follower there.
    #[arg(long)]
    pub name: Option<String>,
    /// Apply every change made so far, then stop (rather than follow until Ctrl-C).
    #[arg(long)]
    pub once: bool,
}
