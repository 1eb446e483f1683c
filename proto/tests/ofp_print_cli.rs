//! Tests of the `ofp-print` binary: success, decode failure, roundtrip mismatch.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn run(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ofp-print"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// OVS tests/ofp-print.at "OFPT_FEATURES_REPLY - OF1.3" followed by "OFPT_BARRIER_REQUEST - OF1.3".
const TWO: &str = "04 06 00 20 00 00 00 01 00 00 50 54 00 00 00 01
                   00 00 01 00 ff 00 00 00 00 00 01 77 00 00 00 00
                   04 14 00 08 00 00 00 01";

#[test]
fn prints_one_line_per_message() {
    let out = run(&["--hex", "--roundtrip", "-"], TWO.as_bytes());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(lines.len(), 2, "{s}");
    assert!(
        lines[0].starts_with("OFPT_FEATURES_REPLY (OF1.3) (xid=0x1): dpid:0000505400000001"),
        "{s}"
    );
    assert_eq!(lines[1], "OFPT_BARRIER_REQUEST (OF1.3) (xid=0x1):");
}

#[test]
fn binary_files_and_json() {
    let dir = std::env::temp_dir().join(format!("ofp-print-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("msgs.bin");
    std::fs::write(
        &f,
        hex::decode(TWO.split_whitespace().collect::<String>()).unwrap(),
    )
    .unwrap();
    let out = run(&["--json", f.to_str().unwrap()], b"");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    let first: serde_json::Value = serde_json::from_str(s.lines().next().unwrap()).unwrap();
    assert_eq!(
        first["body"]["FeaturesReply"]["datapath_id"],
        0x0000_5054_0000_0001u64
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn decode_failure_names_file_offset_and_reason() {
    // A good barrier, then a FEATURES_REQUEST at OpenFlow 1.0 (version not spoken).
    let out = run(
        &["--hex", "-"],
        b"04 14 00 08 00 00 00 01 01 05 00 08 00 00 00 02",
    );
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("-: offset 8: unsupported OpenFlow version 0x01"),
        "{err}"
    );
    // A message cut short: offset of the message and the reason.
    let out = run(&["--hex", "-"], b"04 14 00 10 00 00 00 01");
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("-: offset 0: truncated message"),
        "{}",
        text(&out.stderr)
    );
    // A bad field deep inside: SET_CONFIG with a 2-byte body.
    let out = run(&["--hex", "-"], b"04 09 00 0a 00 00 00 01 00 00");
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("-: offset 10: truncated ofp_switch_config.miss_send_len"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn roundtrip_mismatch_is_reported() {
    // ROLE_REQUEST with non-zero padding (bytes 12..16): decodes, but re-encodes with zeros.
    let msg = b"04 18 00 18 00 00 00 02 00 00 00 02 00 00 00 01 00 00 00 00 00 00 00 03";
    let ok = run(&["--hex", "-"], msg);
    assert!(ok.status.success());
    let out = run(&["--hex", "--roundtrip", "-"], msg);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("-: offset 15: roundtrip mismatch"), "{err}");
}

#[test]
fn bad_hex_is_an_error() {
    let out = run(&["--hex", "-"], b"04 1");
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("invalid hex"));
}
