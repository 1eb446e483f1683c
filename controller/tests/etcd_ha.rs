//! Two controllers on a real etcd (and real OVS): only the leader writes; when the leader dies
//! the follower becomes MASTER with a higher generation_id within 10 s and no flow is lost.
//! Needs `etcd` (Debian's etcd-server) and Open vSwitch; `FABRICFLOW_SKIP_OVS=1` skips.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::collections::BTreeSet;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use fabricflow_controller::desired::PlanSource;
use fabricflow_controller::service::Controller;
use fabricflow_controller::store::Leadership;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A throw-away single-member etcd; killed and its data removed on drop.
struct Etcd {
    child: Child,
    dir: std::path::PathBuf,
    pub client_port: u16,
}

impl Etcd {
    fn start() -> Etcd {
        let dir = std::env::temp_dir().join(format!("ff-etcd-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (cp, pp) = (free_port(), free_port());
        let client = format!("http://127.0.0.1:{cp}");
        let peer = format!("http://127.0.0.1:{pp}");
        let child = Command::new("etcd")
            .args([
                "--name",
                "ff",
                "--data-dir",
                dir.to_str().unwrap(),
                "--listen-client-urls",
                &client,
                "--advertise-client-urls",
                &client,
                "--listen-peer-urls",
                &peer,
                "--initial-advertise-peer-urls",
                &peer,
                "--initial-cluster",
                &format!("ff={peer}"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start etcd (apt install etcd-server)");
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", cp)).is_err() {
            assert!(Instant::now() < deadline, "etcd did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        Etcd {
            child,
            dir,
            client_port: cp,
        }
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn leadership(c: &Controller) -> Leadership {
    c.shared.leadership()
}

/// (target, role) of every controller record of `bridge` as OVS reports it.
fn ovs_roles(bridge: &str) -> Vec<(String, String)> {
    fabricflow_testkit::ovs::controller_records(bridge)
        .iter()
        .map(|u| {
            let t = sh("ovs-vsctl", &["get", "controller", u, "target"])
                .trim()
                .trim_matches('"')
                .to_string();
            let r = sh(
                "ovs-vsctl",
                &["--if-exists", "get", "controller", u, "role"],
            )
            .trim()
            .to_string();
            (t, r)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_leader_writes_and_follower_takes_over() {
    if skip() {
        return;
    }
    init_logs();
    let etcd = Etcd::start();
    let line = Line::create("e", 0x00ff_0000_0000_0e00, 2);
    let mk = |id: &str| {
        let mut c = config(0);
        c.store = format!("etcd://127.0.0.1:{}", etcd.client_port);
        c.controller_id = id.into();
        c.etcd_lease_ttl_s = 2;
        c
    };
    let a = Controller::start(mk("ctl-a"), line.fixture.clone())
        .await
        .unwrap();
    assert!(wait_for(10, || matches!(leadership(&a), Leadership::Leader { .. })).await);
    let Leadership::Leader { generation: gen_a } = leadership(&a) else {
        unreachable!()
    };
    let b = Controller::start(mk("ctl-b"), line.fixture.clone())
        .await
        .unwrap();
    let (ta, tb) = (
        format!("tcp:{}", a.openflow_addr),
        format!("tcp:{}", b.openflow_addr),
    );
    line.set_controllers(&[ta.clone(), tb.clone()]);

    assert!(
        wait_for(20, || synced(&a) == 2).await,
        "leader synced both switches"
    );
    assert!(
        wait_for(10, || leadership(&b)
            == Leadership::Follower { generation: gen_a })
        .await,
        "follower knows the leader's generation: {:?}",
        leadership(&b)
    );
    assert!(
        wait_for(10, || line.names.iter().all(|n| {
            let r = ovs_roles(n);
            r.contains(&(ta.clone(), "master".into())) && r.contains(&(tb.clone(), "slave".into()))
        }))
        .await,
        "OVS roles: {:?}",
        ovs_roles(&line.names[0])
    );
    let plan = line.fixture.plan(&BTreeSet::new());
    let total: usize = plan.values().map(|d| d.flows.len()).sum();
    assert_eq!(flow_mods(&a), total as u64);
    assert_eq!(flow_mods(&b), 0, "the follower never writes");
    assert_eq!(group_mods(&b), 0);
    let (_, m) = http_get(b.http_addr, "/metrics");
    assert!(m.contains("fabricflow_controller_leader 0"), "{m}");

    // The leader dies (no goodbye to etcd: its lease must expire).
    let killed = Instant::now();
    a.shutdown().await;
    assert!(
        wait_for(
            10,
            || matches!(leadership(&b), Leadership::Leader { generation } if generation > gen_a)
        )
        .await,
        "follower did not take over: {:?}",
        leadership(&b)
    );
    assert!(
        wait_for(10, || line
            .names
            .iter()
            .all(|n| ovs_roles(n).contains(&(tb.clone(), "master".into()))))
        .await,
        "OVS roles after takeover: {:?}",
        ovs_roles(&line.names[0])
    );
    assert!(wait_for(10, || synced(&b) == 2).await);
    let took = killed.elapsed();
    assert!(took < Duration::from_secs(10), "takeover took {took:?}");
    eprintln!("takeover (kill → MASTER and synced) took {took:?}");
    // Resync by diff: nothing was missing, nothing rewritten, no flow lost.
    assert_eq!(flow_mods(&b), 0, "new leader rewrote flows");
    for i in 0..2 {
        assert_eq!(
            line.our_flows(i).len(),
            plan[&line.fixture.dpid(i as u32)].flows.len()
        );
    }
    let (_, m) = http_get(b.http_addr, "/metrics");
    assert!(m.contains("fabricflow_controller_leader 1"), "{m}");

    // The old leader comes back: it must stay a follower of the new leader, never write, and
    // leave the switches' master alone.
    let Leadership::Leader { generation: gen_b } = leadership(&b) else {
        unreachable!()
    };
    let a2 = Controller::start(mk("ctl-a"), line.fixture.clone())
        .await
        .unwrap();
    let ta2 = format!("tcp:{}", a2.openflow_addr);
    line.set_controllers(&[tb.clone(), ta2.clone()]);
    assert!(
        wait_for(10, || leadership(&a2)
            == Leadership::Follower { generation: gen_b })
        .await,
        "restarted old leader: {:?}",
        leadership(&a2)
    );
    assert!(
        wait_for(10, || line.names.iter().all(|n| {
            let r = ovs_roles(n);
            r.contains(&(tb.clone(), "master".into())) && r.contains(&(ta2.clone(), "slave".into()))
        }))
        .await,
        "OVS roles with the old leader back: {:?}",
        ovs_roles(&line.names[0])
    );
    assert!(matches!(leadership(&b), Leadership::Leader { generation } if generation == gen_b));
    assert_eq!(flow_mods(&a2), 0, "the restarted old leader wrote flows");
    assert_eq!(group_mods(&a2), 0);
    a2.shutdown().await;
    b.shutdown().await;
}
