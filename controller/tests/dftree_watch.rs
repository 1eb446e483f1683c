//! `fabricflow-controller dftree-watch` on a recorded `port-stats.csv`: the hot spot's edge
//! port stalls and drops for three readings, then goes quiet, while another port stalls as
//! much without dropping (one TCP flow's receiver); the watcher flags only the hot spot, at the
//! first sweep, repaths every edge switch with a flow for `eth_dst = hot spot` only, and
//! unpaths at the second quiet sweep.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::fmt::Write as _;
use std::process::Command;

#[test]
fn the_watcher_repaths_and_unpaths_from_recorded_port_stats() {
    let dir = std::env::temp_dir().join(format!("ff-dftree-watch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("port-stats.csv");
    let mut text = String::from(
        "cycle,switch,port,role,direction,xmit_wait_cycles,xmit_data_phits,xmit_discards\n",
    );
    let step = 500_000_000u64;
    for i in 0..7u64 {
        // h0.1 (leaf0 port 1) stalls 90 % of readings 1..=3, then never again.
        // … dropping 1 000 frames a second meanwhile; leaf1:1 is as busy but drops nothing
        // (a single TCP flow's receiver).
        let hot = i.min(3) * step * 9 / 10;
        let drops = i.min(3) * 500;
        for (sw, port, stall, d) in [
            ("leaf0", 1, hot, drops),
            ("leaf0", 2, 0, 0),
            ("leaf1", 1, i * step * 9 / 10, 0),
        ] {
            writeln!(text, "{},{sw},{port},host,tx,{stall},0,{d}", i * step).unwrap();
        }
    }
    std::fs::write(&csv, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fabricflow-controller"))
        .args([
            "dftree-watch",
            "--topology",
            "leafspine:l=2,s=1,p=2",
            "--no-follow",
        ])
        .arg("--port-stats")
        .arg(&csv)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let changes: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l.get("change").is_some()).collect();
    let of = |kind: &str| -> Vec<(u64, String)> {
        changes
            .iter()
            .filter(|c| c["change"] == kind)
            .map(|c| {
                (
                    c["sweep"].as_u64().unwrap(),
                    c["switch"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    assert_eq!(of("repath"), vec![(1, "leaf0".into()), (1, "leaf1".into())]);
    // Quiet from sweep 4 (reading 3 → 4): cleared at the second quiet sweep.
    assert_eq!(of("unpath"), vec![(5, "leaf0".into()), (5, "leaf1".into())]);
    for c in &changes {
        assert_eq!(c["hot_spot"], "h0.1");
        let flow = c["flow"].as_str().unwrap();
        assert!(flow.contains("dl_dst=02:00:00:00:00:01"), "{flow}");
        assert!(flow.contains("set_field:8->ip_dscp"), "{flow}");
        assert!(
            flow.starts_with("table=1,priority=1500,cookie=0xdf7ee,ip,"),
            "{flow}"
        );
    }
    let sweeps: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l.get("change").is_none()).collect();
    assert_eq!(sweeps.len(), 6, "one sweep per reading after the first");
    assert!(sweeps[..4]
        .iter()
        .all(|s| s["hot_spots"] == serde_json::json!(["h0.1"])));
    std::fs::remove_dir_all(&dir).unwrap();
}
