//! A fabric of the real planner on Open vSwitch: one bridge per switch (patch ports between
//! switches), one network namespace per host. Shared by the end-to-end and operator tests.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use fabricflow_controller::config::Config;
use fabricflow_controller::export::{export, LinkExport, TopologyExport};
use fabricflow_controller::plan::SelectLayout;
use fabricflow_controller::{ofctl, Addressing, Fabric, Plan, PlanOptions};
use fabricflow_testkit::ovs::{Bridge, Host};

use super::COOKIE;

/// The fabric built on OVS: one bridge per switch (patch ports between switches), one network
/// namespace per host (a veth into its switch's host port). Everything is deleted on drop.
pub struct Testbed {
    pub topo: TopologyExport,
    /// Per switch, in `topo.switches` order.
    pub bridges: Vec<Bridge>,
    /// Per host, in `topo.hosts` order.
    pub hosts: Vec<Host>,
}

impl Testbed {
    pub fn create(fabric: &Fabric) -> Testbed {
        Testbed::create_tagged(fabric, "ffd")
    }

    /// [`create`](Self::create) with bridge and namespace names starting with `prefix`
    /// (3 characters: interface names stay within 15), so two tests never share a name.
    pub fn create_tagged(fabric: &Fabric, prefix: &str) -> Testbed {
        let topo = export(fabric, &Addressing::default()).unwrap();
        // prefix + pid: parallel runs do not collide.
        let tag = format!("{prefix}{}", std::process::id() % 10_000);
        let bridges: Vec<Bridge> = topo
            .switches
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let dpid = u64::from_str_radix(&s.dpid, 16).unwrap();
                Bridge::create(&format!("{tag}b{i}"), dpid, &[])
            })
            .collect();
        let mut bed = Testbed {
            topo,
            bridges,
            hosts: Vec::new(),
        };
        for l in &bed.topo.links {
            bed.patch_link(l, true);
        }
        let hosts = (bed.topo.hosts.iter().enumerate())
            .map(|(i, h)| {
                let br = bed.bridge_of(&h.switch);
                Host::create(&format!("{tag}n{i}"), br, h.port, &h.mac, &h.ip)
            })
            .collect();
        bed.hosts = hosts;
        bed
    }

    pub fn bridge_of(&self, switch: &str) -> &Bridge {
        let i = self
            .topo
            .switches
            .iter()
            .position(|s| s.name == switch)
            .unwrap();
        &self.bridges[i]
    }

    /// Points every bridge at `target` (reconnect back-off at most 1 s).
    pub fn set_controller(&self, target: &str) {
        for br in &self.bridges {
            br.set_controllers(&[target.to_owned()]);
        }
    }

    /// Whether OVS reports any bridge connected to its controller.
    pub fn any_connected(&self) -> bool {
        self.bridges.iter().any(Bridge::is_connected)
    }

    /// The controller's flows on `br`, normalised and sorted.
    pub fn flows(&self, br: &Bridge) -> Vec<String> {
        let cookie = format!("cookie={COOKIE:#x}");
        let mut v: Vec<String> = br
            .ofctl(&["--no-stats", "dump-flows", br.name()])
            .lines()
            .filter(|l| l.contains(&cookie))
            .filter_map(ofctl::normalize_flow_line)
            .collect();
        v.sort();
        v
    }

    /// Every group on `br`, normalised and sorted.
    pub fn groups(&self, br: &Bridge) -> Vec<String> {
        let mut v: Vec<String> = br
            .ofctl(&["--no-stats", "dump-groups", br.name()])
            .lines()
            .filter_map(ofctl::normalize_group_line)
            .collect();
        v.sort();
        v
    }

    /// Bridges whose flows or groups differ from `plan` (with the first difference), decision
    /// points in the layout the tests' controllers install (the default).
    pub fn differences(&self, plan: &Plan) -> Vec<String> {
        let mut out = Vec::new();
        for sp in &plan.switches {
            let br = self.bridge_of(&sp.name);
            let mut want_f: Vec<String> = ofctl::flows_text(sp)
                .lines()
                .filter_map(ofctl::normalize_flow_line)
                .collect();
            want_f.sort();
            let mut want_g: Vec<String> = ofctl::groups_text(sp, SelectLayout::default())
                .unwrap()
                .lines()
                .filter_map(ofctl::normalize_group_line)
                .collect();
            want_g.sort();
            let (got_f, got_g) = (self.flows(br), self.groups(br));
            if got_f != want_f {
                let missing: Vec<_> = want_f.iter().filter(|f| !got_f.contains(f)).collect();
                let extra: Vec<_> = got_f.iter().filter(|f| !want_f.contains(f)).collect();
                out.push(format!(
                    "{} flows: missing {missing:#?} extra {extra:#?}",
                    sp.name
                ));
            }
            if got_g != want_g {
                out.push(format!(
                    "{} groups: want {want_g:#?} got {got_g:#?}",
                    sp.name
                ));
            }
        }
        out
    }

    /// Pings every ordered host pair: a first packet (retried once: it may wait for ARP), then
    /// a burst that must lose nothing. Returns the pairs that failed, with what they got.
    ///
    /// A lossy burst is repeated at most [`BURST_RETRIES`] times (each repeat is logged): one
    /// ovs-vswitchd serves every bridge on the host, and under other tests' bulk traffic its
    /// userspace datapath drops packets even on a plain `actions=NORMAL` bridge (measured
    /// 35–47 % ping loss during a neighbour's iperf3). A routing fault is not hidden by this:
    /// ICMP between two hosts always hashes to the same bucket, so a black hole or loop loses
    /// every burst.
    pub fn all_pairs_ping(&self) -> Vec<String> {
        const BURST: u32 = 5;
        const BURST_RETRIES: u32 = 4;
        let n = self.topo.hosts.len();
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..n)
                .map(|a| {
                    s.spawn(move || {
                        let mut bad = Vec::new();
                        for b in (0..n).filter(|&b| b != a) {
                            let first = self.hosts[a].ping(&self.topo.hosts[b].ip, 1) == 1
                                || self.hosts[a].ping(&self.topo.hosts[b].ip, 1) == 1;
                            let mut got = self.hosts[a].ping(&self.topo.hosts[b].ip, BURST);
                            for _ in 0..BURST_RETRIES {
                                if !first || got == BURST {
                                    break;
                                }
                                eprintln!(
                                    "{}->{}: {got}/{BURST} (busy vswitchd?), repeating the burst",
                                    self.topo.hosts[a].name, self.topo.hosts[b].name
                                );
                                // Back off so a neighbour's burst of traffic can pass.
                                std::thread::sleep(std::time::Duration::from_millis(500));
                                got = self.hosts[a].ping(&self.topo.hosts[b].ip, BURST);
                            }
                            if !first || got != BURST {
                                bad.push(format!(
                                    "{}->{}: first {first}, {got}/{BURST}",
                                    self.topo.hosts[a].name, self.topo.hosts[b].name
                                ));
                            }
                        }
                        bad
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        })
    }

    /// Takes the link at (switch, port) down or up.
    pub fn set_link(&self, switch: &str, port: u32, up: bool) {
        let l = self
            .topo
            .links
            .iter()
            .find(|l| (l.a == switch && l.a_port == port) || (l.b == switch && l.b_port == port))
            .unwrap();
        self.patch_link(l, up);
    }

    /// Adds (`up`) or deletes the patch ports at both ends of `l`.
    pub fn patch_link(&self, l: &LinkExport, up: bool) {
        let (a, b) = (self.bridge_of(&l.a), self.bridge_of(&l.b));
        if up {
            a.patch(l.a_port, b, l.b_port);
        } else {
            a.unpatch(l.a_port, b, l.b_port);
        }
    }
}

/// The options `fabricflow-controller run` derives from `cfg` (see `plan_source` in main.rs).
pub fn plan_options(cfg: &Config) -> PlanOptions {
    PlanOptions {
        cookie: cfg.cookie,
        group_base: cfg.group_base,
        p_minimal_percent: cfg.p_minimal_percent,
        agent_controller_id: cfg.agent_controller_id,
        addressing: Addressing::new(cfg.ipv4_base).unwrap(),
        ..Default::default()
    }
}

/// Packets port `port` of `br` has sent (OpenFlow port statistics).
pub fn tx_packets(br: &Bridge, port: u32) -> u64 {
    let out = br.ofctl(&["dump-ports", br.name(), &port.to_string()]);
    out.split("tx pkts=")
        .nth(1)
        .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no tx pkts in {out}"))
}
