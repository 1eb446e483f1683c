//! Per-port congestion counters, the simulator's exact InfiniBand `PortXmitWait` and
//! `PortXmitData`, and `port-stats.csv`, the file the seed study's method analyses
//! (`fabricflow-report`).
//!
//! - **XmitWait**: cycles in which a packet waited at the transmitter with the link free but no
//!   credit for it (so nothing was sent that cycle). A transmitter that is busy sending is never
//!   waiting, however long its queue: a saturated link shows in XmitData, its victims upstream
//!   show in XmitWait.
//! - **XmitData**: phits of the packets the transmitter started sending (data and CNMs), so one
//!   interval's delta may exceed its cycles by less than one packet.
//!
//! Each switch port has its own transmitter (`tx`); a host port also has the host's transmitter
//! sending into it (`rx`), which no switch port would otherwise report. Every directed link of
//! the fabric thus appears exactly once. Hosts consume at line rate, so a host port's `tx` never
//! waits. Counters are cumulative from cycle 0, like a switch counter that is read and never
//! reset; FITF over an interval is Δxmit_wait / Δcycle.

use std::io::{self, Write};

use fabricflow_controller::topology::PortRole;

/// Which transmitter of a port's link a counter belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Direction {
    /// The switch port sending onto its link.
    Tx,
    /// The far end (a host) sending into the switch port.
    Rx,
}

impl Direction {
    /// The name in `port-stats.csv`.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Tx => "tx",
            Direction::Rx => "rx",
        }
    }
}

/// One transmitter's counters at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortCounters {
    /// Switch index in the fabric model.
    pub switch: u32,
    pub port: u32,
    pub role: PortRole,
    pub direction: Direction,
    pub xmit_wait_cycles: u64,
    pub xmit_data_phits: u64,
}

/// Every transmitter's counters read at one cycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortSample {
    pub cycle: u64,
    pub counters: Vec<PortCounters>,
}

/// The CSV header of `port-stats.csv`.
pub const HEADER: &str = "cycle,switch,port,role,direction,xmit_wait_cycles,xmit_data_phits";

/// Writes `samples` as `port-stats.csv` rows (header first); `switch_name` maps a switch index
/// to its fabric name. Role names are [`PortRole::name`], the controller's vocabulary.
pub fn write_csv<W: Write>(
    mut w: W,
    samples: &[PortSample],
    switch_name: impl Fn(u32) -> String,
) -> io::Result<()> {
    writeln!(w, "{HEADER}")?;
    for s in samples {
        for c in &s.counters {
            writeln!(
                w,
                "{},{},{},{},{},{},{}",
                s.cycle,
                switch_name(c.switch),
                c.port,
                c.role.name(),
                c.direction.name(),
                c.xmit_wait_cycles,
                c.xmit_data_phits
            )?;
        }
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn csv_rows_use_the_controllers_role_names() {
        let samples = vec![PortSample {
            cycle: 200,
            counters: vec![
                PortCounters {
                    switch: 3,
                    port: 7,
                    role: PortRole::Global,
                    direction: Direction::Tx,
                    xmit_wait_cycles: 12,
                    xmit_data_phits: 80,
                },
                PortCounters {
                    switch: 3,
                    port: 1,
                    role: PortRole::Host,
                    direction: Direction::Rx,
                    xmit_wait_cycles: 0,
                    xmit_data_phits: 8,
                },
            ],
        }];
        let mut out = Vec::new();
        write_csv(&mut out, &samples, |s| format!("sw{s}")).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "cycle,switch,port,role,direction,xmit_wait_cycles,xmit_data_phits\n\
             200,sw3,7,global,tx,12,80\n\
             200,sw3,1,host,rx,0,8\n"
        );
    }
}
