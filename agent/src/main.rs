//! `fabricflow-agent`: the switch-side QCN-SW agent.
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use fabricflow_agent::AgentConfig;

/// Steers SELECT-group weights from QCN congestion notifications.
#[derive(Debug, Parser)]
#[command(name = "fabricflow-agent", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Parses and validates a TOML configuration, then prints it with every default filled in.
    CheckConfig {
        /// The configuration file (see deploy/agent.example.toml).
        file: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::CheckConfig { file }) => match AgentConfig::from_file(&file) {
            Ok(cfg) => {
                println!("{}: valid", file.display());
                match toml::to_string_pretty(&cfg) {
                    Ok(text) => print!("{text}"),
                    Err(e) => eprintln!("(cannot print the effective configuration: {e})"),
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{}: {e}", file.display());
                ExitCode::FAILURE
            }
        },
        None => {
            println!(
                "fabricflow-agent: only `check-config FILE` is implemented so far; see --help"
            );
            ExitCode::SUCCESS
        }
    }
}
