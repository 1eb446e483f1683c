//! `fabricflow-agent`: the switch-side QCN-SW agent.
use clap::Parser;

/// Steers SELECT-group weights from QCN congestion notifications.
#[derive(Debug, Parser)]
#[command(name = "fabricflow-agent", version, about)]
struct Cli {}

fn main() {
    let _ = Cli::parse();
}
