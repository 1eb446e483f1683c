//! The ofctl text of a Dragonfly(2,4,2) plan loads into real Open vSwitch bridges, and what OVS
//! dumps back equals the plan. Skips (with a message) only when `ovs-vsctl` is not installed.

// Test helpers panic on purpose: a failed expectation is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use fabricflow_controller::plan::{Lossless, SelectLayout};
use fabricflow_controller::{ofctl, Plan, PlanOptions, TopologySpec};

fn run(cmd: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .map_err(|e| format!("{cmd}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd} {}: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Deletes the bridges it created, also when the test fails.
struct Bridges(Vec<String>);
impl Drop for Bridges {
    fn drop(&mut self) {
        for b in &self.0 {
            let _ = run("ovs-vsctl", &["--if-exists", "del-br", b]);
        }
    }
}

fn ovs_available() -> bool {
    if Command::new("ovs-vsctl").arg("--version").output().is_err() {
        eprintln!("SKIP ovs_load: ovs-vsctl is not installed");
        return false;
    }
    if run("ovs-vsctl", &["--timeout=5", "show"]).is_err() {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/ovs-start.sh");
        run("bash", &[&script.to_string_lossy()])
            .expect("ovs-vsctl is installed but OVS does not start");
    }
    true
}

fn lines(text: &str, normalize: fn(&str) -> Option<String>) -> BTreeSet<String> {
    text.lines().filter_map(normalize).collect()
}

#[test]
fn dragonfly_2_4_2_plan_loads_into_ovs_unchanged() {
    if !ovs_available() {
        return;
    }
    let fabric = "dragonfly:p=2,a=4,h=2"
        .parse::<TopologySpec>()
        .unwrap()
        .build()
        .unwrap();
    let dir = std::env::temp_dir().join(format!("ffovs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut bridges = Bridges(Vec::new());
    let variants = [
        (
            "n",
            PlanOptions {
                p_minimal_percent: 60.0,
                ..Default::default()
            },
        ),
        (
            "l",
            PlanOptions {
                p_minimal_percent: 0.0,
                lossless: Some(Lossless { vlan_vid: 7 }),
                ..Default::default()
            },
        ),
    ];
    for (tag, opts) in variants {
        let plan = Plan::build(&fabric, &opts).unwrap();
        for name in ["g0s0", "g0s3", "g4s1"] {
            load_and_compare(&fabric, &plan, name, tag, &dir, &mut bridges);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Loads switch `name`'s plan into a fresh netdev bridge with ofctl and checks that OVS dumps
/// back exactly the plan's groups and flows.
fn load_and_compare(
    fabric: &fabricflow_controller::Fabric,
    plan: &Plan,
    name: &str,
    tag: &str,
    dir: &Path,
    bridges: &mut Bridges,
) {
    let id = fabric.switch_by_name(name).unwrap();
    let sw = &fabric.switches()[id];
    let sp = plan.switch(id).unwrap();
    let br = format!("ff{}{tag}{name}", std::process::id() % 10000);
    bridges.0.push(br.clone());
    let mut args: Vec<String> = vec![
        "--".into(),
        "add-br".into(),
        br.clone(),
        "--".into(),
        "set".into(),
        "bridge".into(),
        br.clone(),
    ];
    args.extend(
        [
            "datapath_type=netdev",
            "protocols=OpenFlow13",
            "fail-mode=secure",
        ]
        .map(String::from),
    );
    for p in &sw.ports {
        let ifname = format!("{br}p{}", p.no);
        args.extend(
            [
                "--",
                "add-port",
                &br,
                &ifname,
                "--",
                "set",
                "interface",
                &ifname,
                "type=internal",
            ]
            .map(String::from),
        );
        args.push(format!("ofport_request={}", p.no));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run("ovs-vsctl", &args).unwrap();

    let groups_file = dir.join(format!("{br}.groups"));
    let flows_file = dir.join(format!("{br}.flows"));
    std::fs::write(
        &groups_file,
        ofctl::groups_text(sp, SelectLayout::Slots).unwrap(),
    )
    .unwrap();
    std::fs::write(&flows_file, ofctl::flows_text(sp)).unwrap();
    run(
        "ovs-ofctl",
        &[
            "-O",
            "OpenFlow13",
            "add-groups",
            &br,
            &groups_file.to_string_lossy(),
        ],
    )
    .unwrap();
    run(
        "ovs-ofctl",
        &[
            "-O",
            "OpenFlow13",
            "add-flows",
            &br,
            &flows_file.to_string_lossy(),
        ],
    )
    .unwrap();

    let dumped_groups = run("ovs-ofctl", &["-O", "OpenFlow13", "dump-groups", &br]).unwrap();
    let dumped_flows = run(
        "ovs-ofctl",
        &["-O", "OpenFlow13", "--no-stats", "dump-flows", &br],
    )
    .unwrap();
    let want_groups = lines(
        &ofctl::groups_text(sp, SelectLayout::Slots).unwrap(),
        ofctl::normalize_group_line,
    );
    let got_groups = lines(&dumped_groups, ofctl::normalize_group_line);
    assert_eq!(got_groups, want_groups, "{br}: groups differ");
    let want_flows = lines(&ofctl::flows_text(sp), ofctl::normalize_flow_line);
    let got_flows = lines(&dumped_flows, ofctl::normalize_flow_line);
    let missing: Vec<_> = want_flows.difference(&got_flows).collect();
    let extra: Vec<_> = got_flows.difference(&want_flows).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{br}: missing {missing:#?}\nextra {extra:#?}"
    );
    assert_eq!(want_flows.len(), sp.flows.len());
}

#[test]
fn torus_multipath_plan_loads_into_ovs_unchanged() {
    if !ovs_available() {
        return;
    }
    let fabric = "torus:k=4,n=2,p=2"
        .parse::<TopologySpec>()
        .unwrap()
        .build()
        .unwrap();
    let dir = std::env::temp_dir().join(format!("ffovs-t-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut bridges = Bridges(Vec::new());
    let opts = PlanOptions {
        multipath: Some(fabricflow_controller::plan::paths::Multipath::default()),
        ..Default::default()
    };
    let plan = Plan::build(&fabric, &opts).unwrap();
    for name in ["c0", "c5", "c15"] {
        load_and_compare(&fabric, &plan, name, "m", &dir, &mut bridges);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
