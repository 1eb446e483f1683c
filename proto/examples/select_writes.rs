//! Prints, one `ovs-ofctl` group per line, the SELECT group a decision point's agent writes for
//! each of a sequence of logical weights, in the weighted or the slotted layout
//! (`fabricflow_proto::select_slots`): the groups `scripts/select-churn.sh` installs on Open
//! vSwitch to count the flows each write moves.
//!
//!     cargo run -q -p fabricflow-proto --example select_writes -- slots 2,3,4 \
//!         250/5/0/1 245/7/3/1 240/10/5/1

use std::process::ExitCode;

use fabricflow_proto::openflow::action::Action;
use fabricflow_proto::openflow::group::Bucket;
use fabricflow_proto::select_slots::SlotGroup;

fn ofctl(buckets: &[Bucket]) -> String {
    let text: Vec<String> = buckets
        .iter()
        .map(|b| {
            let port = b.output_port().unwrap_or(0);
            format!("bucket=weight:{},actions=output:{port}", b.weight)
        })
        .collect();
    format!("group_id=1,type=select,{}", text.join(","))
}

fn parse_list<T: std::str::FromStr>(s: &str, sep: char) -> Option<Vec<T>> {
    s.split(sep).map(|x| x.parse().ok()).collect()
}

fn run(args: &[String]) -> Result<(), String> {
    let usage = "usage: select_writes weights|slots PORT,PORT,... W/W/.../PAD ...";
    let [layout, ports, steps @ ..] = args else {
        return Err(usage.into());
    };
    let ports: Vec<u32> = parse_list(ports, ',').ok_or(usage)?;
    let first = ports.first().copied().ok_or(usage)?;
    let logical = |w: &[u16]| -> Vec<Bucket> {
        ports
            .iter()
            .chain([&first])
            .zip(w)
            .map(|(&p, &w)| Bucket::new(w, vec![Action::output(p)]))
            .collect()
    };
    let mut slotted: Option<SlotGroup> = None;
    for step in steps {
        let w: Vec<u16> = parse_list(step, '/').ok_or(usage)?;
        if w.len() != ports.len() + 1 {
            return Err(format!("{step}: one weight per port and the padding's"));
        }
        let buckets = match (layout.as_str(), slotted.as_mut()) {
            ("weights", _) => logical(&w),
            ("slots", Some(g)) => {
                g.set_weights(&w).map_err(|e| format!("{step}: {e}"))?;
                g.buckets()
            }
            ("slots", None) => {
                let g =
                    SlotGroup::from_logical(&logical(&w)).map_err(|e| format!("{step}: {e}"))?;
                let b = g.buckets();
                slotted = Some(g);
                b
            }
            _ => return Err(usage.into()),
        };
        println!("{}", ofctl(&buckets));
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
