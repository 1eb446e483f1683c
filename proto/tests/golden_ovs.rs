//! Every OpenFlow message captured from Open vSwitch 3.1 (`tests/golden/ovs-3.1/*.bin`, see
//! `tests/golden/README.md` and `scripts/capture-golden.sh`) must decode, and re-encode to exactly
//! the captured bytes.
//!
//! Contract used: `Message::decode(&[u8]) -> Result<Message, DecodeError>` (one whole message) and
//! `Message::to_bytes(&self) -> BytesMut`.

use std::fs;
use std::path::{Path, PathBuf};

use fabricflow_proto::openflow::message::Message;
use fabricflow_proto::DecodeError;

#[test]
fn ovs_3_1_captures_decode_and_reencode_exactly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/ovs-3.1");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "bin"))
        .collect();
    files.sort();
    assert!(files.len() >= 150, "only {} golden files", files.len());
    let mut failures = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = fs::read(path).unwrap();
        let decoded: Result<Message, DecodeError> = Message::decode(&bytes);
        match decoded {
            Err(e) => failures.push(format!("{name}: decode failed: {e}")),
            Ok(msg) => {
                let out = msg.to_bytes();
                let out: &[u8] = &out;
                if out != bytes.as_slice() {
                    let at = out
                        .iter()
                        .zip(&bytes)
                        .position(|(a, b)| a != b)
                        .unwrap_or(out.len().min(bytes.len()));
                    failures.push(format!(
                        "{name}: re-encoding differs at offset {at} (encoded {} bytes, captured {})",
                        out.len(),
                        bytes.len()
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} captured messages fail:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}
