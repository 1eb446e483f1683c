//! Writes a synthetic `port-stats.csv` of about BYTES bytes for measuring `fabricflow-report`
//! (throughput, memory): `cargo run --release -p fabricflow-report --example synth_port_stats --
//! PATH BYTES`. 5 016 transmitters (the 1 056-host Dragonfly's), one read of all every 1 000
//! cycles, a quarter of them stalling a random share of each interval.

use std::io::{BufWriter, Write};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(path), Some(bytes)) = (args.next(), args.next().and_then(|b| b.parse::<u64>().ok()))
    else {
        eprintln!("usage: synth_port_stats PATH BYTES");
        std::process::exit(2);
    };
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    writeln!(
        w,
        "cycle,switch,port,role,direction,xmit_wait_cycles,xmit_data_phits"
    )?;
    let (ports, interval) = (5_016u64, 1_000u64);
    let mut state = vec![(0u64, 0u64); ports as usize];
    let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
    let mut written = 0u64;
    let mut cycle = 0u64;
    while written < bytes {
        let mut line = Vec::with_capacity(64);
        for (i, (wait, data)) in state.iter_mut().enumerate() {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let stalled = i.is_multiple_of(4) && !rng.is_multiple_of(3);
            if stalled && cycle > 0 {
                *wait += rng % interval;
            }
            if cycle > 0 {
                *data += (rng >> 20) % interval;
            }
            let (role, dir) = match i % 19 {
                0..=3 => ("host", "tx"),
                4..=7 => ("host", "rx"),
                8..=14 => ("local", "tx"),
                _ => ("global", "tx"),
            };
            line.clear();
            writeln!(
                line,
                "{cycle},g{}s{},{},{role},{dir},{wait},{data}",
                i / 152,
                (i / 19) % 8,
                i % 19
            )?;
            w.write_all(&line)?;
            written += line.len() as u64;
        }
        cycle += interval;
    }
    w.flush()
}
