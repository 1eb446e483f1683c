//! `fabricflow-controller`: the fabric's proactive SDN controller.
use clap::Parser;

/// Plans and installs fabricflow's conditional routing rules on OpenFlow 1.3 switches.
#[derive(Debug, Parser)]
#[command(name = "fabricflow-controller", version, about)]
struct Cli {}

fn main() {
    let _ = Cli::parse();
}
