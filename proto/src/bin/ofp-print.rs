//! `ofp-print`: decode and print OpenFlow messages, one line per message.
//!
//! Each FILE (or `-` for standard input) holds one or more concatenated binary OpenFlow messages
//! (hex text with `--hex`; whitespace ignored). Exits non-zero if any message fails to decode
//! or, with `--roundtrip`, re-encodes to different bytes; the failure line names the file, the
//! byte offset and the reason.

use std::io::Read;
use std::process::ExitCode;

use clap::Parser;
use fabricflow_proto::openflow::header::{Header, HEADER_LEN};
use fabricflow_proto::openflow::message::Message;
use fabricflow_proto::openflow::print::to_json_string;

#[derive(Debug, Parser)]
#[command(name = "ofp-print", about = "Decode and print OpenFlow 1.3 messages")]
struct Args {
    /// Print each message as JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Re-encode every decoded message and fail if the bytes differ.
    #[arg(long)]
    roundtrip: bool,
    /// Inputs are hex text (whitespace ignored) instead of binary.
    #[arg(long)]
    hex: bool,
    /// Input files; `-` reads standard input.
    #[arg(required = true)]
    files: Vec<String>,
}

fn read_input(name: &str) -> std::io::Result<Vec<u8>> {
    if name == "-" {
        let mut v = Vec::new();
        std::io::stdin().read_to_end(&mut v)?;
        Ok(v)
    } else {
        std::fs::read(name)
    }
}

fn unhex(text: &[u8]) -> Result<Vec<u8>, String> {
    let compact: Vec<u8> = text
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    hex::decode(&compact).map_err(|e| format!("invalid hex: {e}"))
}

/// Prints every message of one input; returns false if anything failed.
fn process(name: &str, bytes: &[u8], args: &Args) -> bool {
    let mut ok = true;
    let mut off = 0usize;
    while off < bytes.len() {
        let rest = bytes.get(off..).unwrap_or_default();
        let Some(h) = Header::peek(rest) else {
            eprintln!(
                "{name}: offset {off}: truncated header ({} bytes left, 8 needed)",
                rest.len()
            );
            return false;
        };
        let len = usize::from(h.length);
        if len < HEADER_LEN {
            eprintln!(
                "{name}: offset {}: message length {len} shorter than the header",
                off + 2
            );
            return false;
        }
        let Some(msg_bytes) = rest.get(..len) else {
            eprintln!(
                "{name}: offset {off}: truncated message: length {len}, only {} bytes left",
                rest.len()
            );
            return false;
        };
        match Message::decode(msg_bytes) {
            Ok(m) => {
                if args.json {
                    println!("{}", to_json_string(&m));
                } else {
                    println!("{m}");
                }
                if args.roundtrip {
                    let again = m.to_bytes();
                    if again.as_ref() != msg_bytes {
                        let at = again
                            .iter()
                            .zip(msg_bytes)
                            .position(|(a, b)| a != b)
                            .unwrap_or(again.len().min(msg_bytes.len()));
                        eprintln!(
                            "{name}: offset {}: roundtrip mismatch (re-encoded {} bytes, input {} bytes, first difference at message byte {at})",
                            off + at,
                            again.len(),
                            msg_bytes.len()
                        );
                        ok = false;
                    }
                }
            }
            Err(e) => {
                eprintln!("{name}: offset {}: {}", off + e.offset, e.kind);
                println!(
                    "{} ({}) (xid={:#x}): ***decode error***",
                    h.msg_type.name(),
                    fabricflow_proto::openflow::print::version_tag(h.version),
                    h.xid
                );
                ok = false;
            }
        }
        off += len;
    }
    ok
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mut ok = true;
    for name in &args.files {
        let raw = match read_input(name) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("{name}: cannot read: {e}");
                ok = false;
                continue;
            }
        };
        let bytes = if args.hex {
            match unhex(&raw) {
                Ok(b) => b,
                Err(e) => {
                    eprintln!("{name}: offset 0: {e}");
                    ok = false;
                    continue;
                }
            }
        } else {
            raw
        };
        ok &= process(name, &bytes, &args);
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
