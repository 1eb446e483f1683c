//! The conventions the controller's plan, the agent and the Mininet harness must share — not
//! wire formats of any standard, but fabricflow's own, defined here once so every party reads
//! the same value (DESIGN §4). The harness gets them through `fabricflow-controller topology`.

/// Cookie of every flow the controller installs ("fab f10 a"); the agent's plan read filters on
/// it.
pub const PLAN_COOKIE: u64 = 0x0fab_f10a_0000_0001;
/// Controller id of the agent's OpenFlow connection (`NXT_SET_CONTROLLER_ID`); the plan's CNM
/// rule sends to `controller(id=…)` with it.
pub const AGENT_CONTROLLER_ID: u16 = 0x0fab;
/// First decision-point group id: group id = base + minimal port.
pub const DECISION_GROUP_BASE: u32 = 1000;
/// Number of group ids reserved for decision points (OpenFlow 1.3 groups carry no cookie: the
/// range is what marks a group as the controller's decision point).
pub const DECISION_GROUP_SPAN: u32 = 65_536;

/// Table numbers of the plan's pipeline.
pub mod table {
    /// Classify: CNMs, LLDP, ARP, host or fabric port.
    pub const CLASSIFY: u8 = 0;
    /// Inject: the conditional rules (traffic from hosts).
    pub const INJECT: u8 = 1;
    /// Transit: minimal forwarding.
    pub const TRANSIT: u8 = 2;
}
