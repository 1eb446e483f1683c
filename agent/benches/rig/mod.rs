//! The agent's CNM path without OVS and without sockets, for the `cnm` benchmarks: a Dragonfly
//! switch's plan, as the controller's planner makes it, installed on an in-memory switch
//! (`fabricflow-testkit`); the agent's real [`Session`] connected to it and warmed up; CNM
//! PACKET_IN *bytes* exactly as that switch frames them (OpenFlow 1.3); one step is
//! `Session::handle_bytes` of one packet-in, then `poll_transmit` encoded into a byte buffer
//! (the GROUP_MOD bytes the shell would write), timed with `Instant`. Everything else — the
//! session's timers (policy tick, port statistics, plan reads, echo) on virtual time, the
//! switch's replies, the fabric's traffic — runs between the timed steps.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use fabricflow_agent::config::{AgentConfig, SwitchConfig};
use fabricflow_agent::runtime::switch::session_config;
use fabricflow_agent::session::Session;
use fabricflow_controller::planner::desired_state;
use fabricflow_controller::topology::Peer;
use fabricflow_controller::{PlanOptions, TopologySpec};
use fabricflow_proto::cnm::{Cnm, Cpid};
use fabricflow_proto::ethernet::EthernetFrame;
use fabricflow_proto::openflow::message::Message;
use fabricflow_proto::openflow::port::Port;
use fabricflow_proto::MacAddr;
use fabricflow_testkit::fake_switch::{ConnId, FakeSwitch};

/// The fabric: 36 switches, 72 hosts (the Mininet demo's).
pub const TOPOLOGY: &str = "dragonfly:p=2,a=4,h=2";
/// Line rate of every port, kb/s (what PORT_DESC reports; it scales the rate-relative constants).
const PORT_KBPS: u32 = 40_000_000;
/// Virtual time between two CNMs at the switch: 20 000 CNMs/s.
pub const CNM_EVERY_NS: u64 = 50_000;
/// Fabric ports send at half their line rate (port statistics feed the policy's increases).
const LOAD: f64 = 0.5;

/// What one step produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// At least one GROUP_MOD.
    Write,
    /// Nothing to send (a change under a quantum, P at its floor or ceiling, or deferred).
    NoWrite,
}

/// One warmed-up switch and its CNM stream.
pub struct Rig {
    session: Session,
    switch: FakeSwitch,
    conn: ConnId,
    fabric_ports: Vec<u32>,
    packets: Vec<Vec<u8>>,
    next: usize,
    now_ns: u64,
    tx_bytes: f64,
    out: bytes::BytesMut,
    /// GROUP_MODs the timed steps produced.
    pub group_mods: u64,
}

/// xorshift64: a reproducible stream without an RNG dependency.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[(self.next() % v.len() as u64) as usize]
    }
}

/// The shipped agent configuration with a minimum update interval of `interval_line_bytes`
/// (0: every change of a quantum is written at once).
pub fn config(interval_line_bytes: u64) -> AgentConfig {
    let mut cfg = AgentConfig::default();
    cfg.weights.min_update_interval_line_bytes = interval_line_bytes;
    cfg.weights.min_update_interval_buffer_drains = 0.0;
    cfg.runtime.emulated_cp.enabled = false;
    cfg
}

impl Rig {
    /// The switch of the fabric with the most decision points, its plan installed, the agent
    /// connected and ready, then `warm_up` CNMs processed.
    pub fn new(cfg: &AgentConfig, warm_up: usize) -> Rig {
        let spec: TopologySpec = TOPOLOGY.parse().unwrap();
        let fabric = spec.build().unwrap();
        let desired = desired_state(&fabric, &PlanOptions::default(), &BTreeSet::new()).unwrap();
        let sw = fabric
            .switches()
            .iter()
            .filter(|s| s.has_hosts())
            .max_by_key(|s| desired[&s.dpid].groups.len())
            .unwrap();
        let plan = &desired[&sw.dpid];
        let ports = sw.ports.iter().map(|p| {
            let mac = MacAddr::from_u64((sw.dpid << 8 | u64::from(p.no)) & 0xffff_ffff_ffff);
            let mut port = Port::new(p.no, mac, &format!("{}-p{}", sw.name, p.no));
            port.curr_speed = PORT_KBPS;
            port
        });
        let mut switch = FakeSwitch::new(sw.dpid, ports);
        // The controller's plan, as its sync would leave it.
        let ctl = switch.connect();
        for (x, g) in (1..).zip(&plan.groups) {
            switch.execute(ctl, Message::group_mod(x, g.clone()));
        }
        for (x, f) in (1_000..).zip(&plan.flows) {
            switch.execute(ctl, Message::flow_mod(x, f.clone()));
        }
        switch.disconnect(ctl);

        let sc = SwitchConfig {
            name: sw.name.clone(),
            target: None,
            ports: Vec::new(),
        };
        let session = Session::new(session_config(cfg, &sc), cfg).unwrap();
        let conn = switch.connect();
        let fabric_ports: Vec<u32> = sw.fabric_ports().map(|p| p.no).collect();

        let mut rig = Rig {
            session,
            switch,
            conn,
            fabric_ports,
            packets: Vec::new(),
            next: 0,
            now_ns: 1_000_000,
            tx_bytes: 0.0,
            out: bytes::BytesMut::with_capacity(1 << 16),
            group_mods: 0,
        };
        rig.session.on_connected(rig.now_ns);
        rig.pump();
        assert!(
            rig.session.status().plan_ready,
            "the agent learned the plan"
        );
        assert!(
            rig.session.plan().unwrap().groups.len() >= 2,
            "a switch with decision points"
        );
        // The CNM stream: a host of this switch sent a frame to a host of another group; a
        // congestion point on its way sampled it; the CNM comes back by the port the frame
        // left by. Adversarial traffic: 70 % of the CNMs are about frames through one hot
        // decision point's minimal port, with QntzFb 32..=63; the rest about any other group,
        // with QntzFb 1..=16.
        let own_group = sw.group.unwrap();
        let sources: Vec<MacAddr> = sw
            .ports
            .iter()
            .filter_map(|p| match p.peer {
                Peer::Host(h) => Some(fabric.hosts()[h].location.mac()),
                Peer::Switch { .. } => None,
            })
            .collect();
        let remote: Vec<MacAddr> = fabric
            .hosts()
            .iter()
            .filter(|h| h.location.group != own_group)
            .map(|h| h.location.mac())
            .collect();
        let core = rig.session.core();
        let hot_port = core
            .plan()
            .unwrap()
            .groups
            .values()
            .next()
            .unwrap()
            .dp
            .minimal_port;
        let hot: Vec<MacAddr> = remote
            .iter()
            .copied()
            .filter(|d| core.minimal_port_towards(*d) == Some(hot_port))
            .collect();
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        let mut packets = Vec::new();
        for _ in 0..4096 {
            let src = rng.pick(&sources);
            let (dst, qntz_fb) = if rng.next() % 10 < 7 {
                (rng.pick(&hot), 32 + (rng.next() % 32) as u8)
            } else {
                (rng.pick(&remote), 1 + (rng.next() % 16) as u8)
            };
            let in_port = core.minimal_port_towards(dst).unwrap();
            let sampled = EthernetFrame::new(dst, src, 0x0800, vec![0x45; 1_486]);
            let mut frame = bytes::BytesMut::new();
            sampled.encode_header(&mut frame);
            frame.extend_from_slice(&[0x45; 1_486]);
            let cp = MacAddr::from_u64(0x0200_0000_0000 | u64::from(in_port));
            let cnm = Cnm::for_sampled_frame(&frame, cp, Cpid::new(cp, 1), qntz_fb, 100, 10)
                .unwrap()
                .to_vec();
            packets.push((in_port, cnm));
        }
        // The agent's connection carries its controller id now: frame every CNM as the switch
        // sends it to the agent.
        for (in_port, cnm) in packets {
            rig.switch.receive_frame(in_port, &cnm);
            let bytes = rig.switch.take_output(rig.conn);
            assert!(!bytes.is_empty(), "the switch framed a packet-in");
            rig.packets.push(bytes);
        }
        for _ in 0..warm_up {
            rig.step();
        }
        let c = rig.session.counters();
        assert_eq!(c.cnm_received, warm_up as u64, "every CNM charged: {c:?}");
        rig.group_mods = 0;
        rig
    }

    /// Moves bytes between the session and the switch until nothing moves.
    fn pump(&mut self) {
        loop {
            self.out.clear();
            while let Some(m) = self.session.poll_transmit() {
                m.encode(&mut self.out);
            }
            let sent = !self.out.is_empty();
            if sent {
                self.switch.handle_bytes(self.conn, &self.out);
            }
            let back = self.switch.take_output(self.conn);
            if !back.is_empty() {
                self.session.handle_bytes(&back, self.now_ns);
            }
            self.session.take_cnm_reactions().for_each(drop);
            if !sent && back.is_empty() {
                return;
            }
        }
    }

    /// Advances virtual time to the next CNM, running every timer due on the way (untimed).
    fn advance(&mut self) {
        let next = self.now_ns + CNM_EVERY_NS;
        while let Some(t) = self.session.next_deadline_ns().filter(|t| *t <= next) {
            self.now_ns = self.now_ns.max(t);
            self.traffic();
            self.session.on_timer(self.now_ns);
            self.pump();
        }
        self.now_ns = next;
        self.traffic();
    }

    /// Every fabric port has sent at `LOAD` of its line rate up to now.
    fn traffic(&mut self) {
        let bytes = self.now_ns as f64 * 1e-9 * f64::from(PORT_KBPS) * 1e3 / 8.0 * LOAD;
        if bytes > self.tx_bytes {
            self.tx_bytes = bytes;
            for &p in &self.fabric_ports {
                self.switch.set_tx_bytes(p, bytes as u64);
            }
        }
    }

    /// One CNM: the timers due before it run (untimed), then its PACKET_IN bytes go in and the
    /// GROUP_MOD bytes come out (timed), then the switch takes them (untimed).
    pub fn step(&mut self) -> (Duration, Outcome) {
        self.advance();
        let packet = &self.packets[self.next % self.packets.len()];
        self.next += 1;
        let before = self.session.counters().group_mods_sent;
        let t0 = Instant::now();
        self.session.handle_bytes(packet, self.now_ns);
        self.out.clear();
        while let Some(m) = self.session.poll_transmit() {
            m.encode(&mut self.out);
        }
        let took = t0.elapsed();
        std::hint::black_box(&self.out);
        let mods = self.session.counters().group_mods_sent - before;
        self.group_mods += mods;
        if !self.out.is_empty() {
            let out = std::mem::take(&mut self.out);
            self.switch.handle_bytes(self.conn, &out);
            self.out = out;
        }
        self.pump();
        let outcome = if mods > 0 {
            Outcome::Write
        } else {
            Outcome::NoWrite
        };
        (took, outcome)
    }
}
