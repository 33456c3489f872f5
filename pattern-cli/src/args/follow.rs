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
    /// How long the follower's lease holds without a renewal, in seconds: how long a
    /// successor (this command again, or the application's follower) waits after this one
    /// is killed. It is renewed every third of it while this one runs.
    #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    pub lease: u64,
}
