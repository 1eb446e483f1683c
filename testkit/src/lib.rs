//! Test equipment for fabricflow: an in-memory OpenFlow switch ([`fake_switch`]) and an
//! in-process fabric ([`fabric`]) in which the controller's and the agent's real sessions talk to
//! fake switches over byte pipes on virtual time. Conversation-level behaviour (sync by diff,
//! reconnects, refusals, CNM → weight write) is tested there in milliseconds, without root;
//! real Open vSwitch stays the interop and performance check.

pub mod fabric;
pub mod fake_switch;
pub mod ovs;
