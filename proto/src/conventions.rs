//! The conventions the controller's plan, the agent and the Mininet harness must share — not
//! wire formats of any standard, but fabricflow's own, defined here once so every party reads
//! the same value (DESIGN §4). The harness gets them through `fabricflow-controller topology`.

/// Cookie of every flow the controller installs ("fab f10 a"); the agent's plan read filters on
/// it.
pub const PLAN_COOKIE: u64 = 0x0fab_f10a_0000_0001;
/// Controller id of the agent's OpenFlow connection (`NXT_SET_CONTROLLER_ID`); the plan's CNM
/// rule sends to `controller(id=…)` with it.
pub const AGENT_CONTROLLER_ID: u16 = 0x0fab;
/// First decision-point group id: group id = base + minimal port (+ [`EQUAL_COST_GROUP_OFFSET`]
/// when every candidate is minimal too).
pub const DECISION_GROUP_BASE: u32 = 1000;
/// Number of group ids reserved for decision points (OpenFlow 1.3 groups carry no cookie: the
/// range is what marks a group as the controller's decision point).
pub const DECISION_GROUP_SPAN: u32 = 65_536;
/// Offset within the decision-point range of the groups whose candidates are all minimal too
/// (fat-tree up ports, file-fabric ECMP): group id = base + offset + minimal port. There every
/// bucket's weight follows its own port's P ([`crate::select_weights::equal_cost_weights`]), so
/// all P at 100 is an even split; the id is the
/// only place a switch can carry that (OpenFlow 1.3 groups have no cookie). Ports of a switch
/// with decision points must therefore be below this offset.
pub const EQUAL_COST_GROUP_OFFSET: u32 = DECISION_GROUP_SPAN / 2;
/// First multipath (DRB) group id: group id = base + destination host index; just above the
/// decision-point range, so an agent running QCN-SW never takes a path group for a decision point.
pub const PATH_GROUP_BASE: u32 = DECISION_GROUP_BASE + DECISION_GROUP_SPAN;
/// Number of group ids reserved for multipath groups.
pub const PATH_GROUP_SPAN: u32 = 65_536;

/// Whether `group_id` lies in the multipath range.
pub fn is_path_group(group_id: u32) -> bool {
    group_id
        .checked_sub(PATH_GROUP_BASE)
        .is_some_and(|off| off < PATH_GROUP_SPAN)
}

/// Table numbers of the plan's pipeline.
pub mod table {
    /// Classify: CNMs, LLDP, ARP, host or fabric port.
    pub const CLASSIFY: u8 = 0;
    /// Inject: the conditional rules (traffic from hosts).
    pub const INJECT: u8 = 1;
    /// Transit: minimal forwarding.
    pub const TRANSIT: u8 = 2;
}

/// The freeze marker: a controller flow (plan cookie) in the classify table matching this
/// `metadata` value, which no packet can carry there (the pipeline starts every packet with
/// metadata 0 and the plan never writes it). Its presence on a switch tells the switch's agent
/// to stop changing bucket weights: the operator's freeze travels in-band, through the one
/// channel both sides already share, and survives a restart of either.
pub const FREEZE_MARKER_METADATA: u64 = 0x0fab_f2ee_2e00_0001;
/// Priority of the freeze marker (its match cannot hit a packet, so any value is inert).
pub const FREEZE_MARKER_PRIORITY: u16 = 1;
