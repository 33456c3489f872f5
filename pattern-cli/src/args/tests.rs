use super::*;
use clap::CommandFactory;

#[test]
fn the_command_line_is_consistent() {
    Cli::command().debug_assert();
}
