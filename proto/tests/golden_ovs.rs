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

/// The captures must decode to *typed* messages, not to the opaque fallbacks: a decoder that
/// turned everything into `Unknown` would pass the byte-exact test above.
#[test]
fn ovs_3_1_captures_decode_to_typed_messages() {
    use fabricflow_proto::openflow::message::Body;
    use fabricflow_proto::openflow::multipart::MultipartReplyBody;
    use fabricflow_proto::openflow::oxm::OxmField;
    use std::collections::BTreeSet;

    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/ovs-3.1");
    let mut seen = BTreeSet::new();
    let mut masked_eth_dst = false;
    let mut select_weights = Vec::new();
    for entry in fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "bin") {
            continue;
        }
        let msg = Message::decode(&fs::read(&path).unwrap()).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        match &msg.body {
            Body::Unknown { .. } => panic!("{name}: decoded as an unknown message type"),
            Body::MultipartReply(r) => {
                assert!(
                    !matches!(r.body, MultipartReplyBody::Unknown { .. }),
                    "{name}: multipart reply decoded as unknown"
                );
                seen.insert(format!("MULTIPART_REPLY/{:?}", r.body.mp_type()));
            }
            Body::FlowMod(f) => {
                masked_eth_dst |= f.r#match.fields.iter().any(
                    |o| matches!(o, OxmField::EthDst { mask: Some(m), .. } if m.octets() == [0xff, 0xff, 0xff, 0xff, 0, 0]),
                );
            }
            Body::GroupMod(g) if name.starts_with("add-group-select") => {
                select_weights = g.weights();
            }
            _ => {}
        }
        seen.insert(msg.body.name().to_owned());
    }
    for want in [
        "OFPT_HELLO",
        "OFPT_ERROR",
        "OFPT_FEATURES_REPLY",
        "OFPT_FLOW_MOD",
        "OFPT_GROUP_MOD",
        "OFPT_METER_MOD",
        "OFPT_PACKET_IN",
        "OFPT_PACKET_OUT",
        "OFPT_BARRIER_REPLY",
        "ONFT_BUNDLE_CONTROL",
        "ONFT_BUNDLE_ADD_MESSAGE",
        "MULTIPART_REPLY/PortStats",
        "MULTIPART_REPLY/PortDesc",
        "MULTIPART_REPLY/GroupDesc",
        "MULTIPART_REPLY/Flow",
        "MULTIPART_REPLY/TableFeatures",
    ] {
        assert!(
            seen.contains(want),
            "no typed {want} among the captures; saw {seen:?}"
        );
    }
    assert!(masked_eth_dst, "no FLOW_MOD with a masked eth_dst decoded");
    assert!(
        !select_weights.is_empty() && select_weights.iter().any(|&w| w > 1),
        "select group weights: {select_weights:?}"
    );
}
