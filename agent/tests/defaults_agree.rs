//! The agent finds the plan's groups by cookie and group-id base, and receives CNMs only on its
//! controller id: out of the box, both sides' defaults must agree (they once did not: the
//! controller service defaulted to a different cookie and controller id than its own planner).

use fabricflow_agent::config::AgentConfig;
use fabricflow_controller::config::Config;
use fabricflow_controller::plan;

#[test]
fn agent_and_controller_defaults_agree() {
    let agent = AgentConfig::default();
    let controller = Config::with_fabric("dragonfly:p=1,a=2,h=1");
    let conv = &agent.runtime.plan;

    assert_eq!(conv.cookie, plan::DEFAULT_COOKIE);
    assert_eq!(controller.cookie, plan::DEFAULT_COOKIE);
    assert_eq!(
        agent.runtime.controller_id,
        plan::DEFAULT_AGENT_CONTROLLER_ID
    );
    assert_eq!(
        controller.agent_controller_id,
        plan::DEFAULT_AGENT_CONTROLLER_ID
    );
    assert_eq!(conv.group_id_base, plan::DEFAULT_GROUP_BASE);
    assert_eq!(controller.group_base, plan::DEFAULT_GROUP_BASE);
    assert_eq!(conv.inject_table, plan::TABLE_INJECT);
    assert_eq!(conv.transit_table, plan::TABLE_TRANSIT);
}
