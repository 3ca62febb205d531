//! `vt100-bench FILE REPS`: FILE holds PTY reads as (u32 little-endian length, bytes) records. Feeds them all
//! to one 50x200 `vt100::Parser` once as warm-up, then REPS times, and prints the seconds of the timed passes.
//! The parser is kept across passes (state carried), as the Python side does.
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let data = std::fs::read(&args[1]).expect("read input");
    let reps: usize = args[2].parse().expect("reps");
    let mut chunks: Vec<&[u8]> = Vec::new();
    let mut i = 0;
    while i + 4 <= data.len() {
        let n = u32::from_le_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]) as usize;
        chunks.push(&data[i + 4..i + 4 + n]);
        i += 4 + n;
    }
    let mut parser = vt100::Parser::new(50, 200, 0);
    for c in &chunks {
        parser.process(c);
    }
    let t0 = Instant::now();
    for _ in 0..reps {
        for c in &chunks {
            parser.process(c);
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    // keep the screen observable so nothing is optimised away
    let rows = parser.screen().contents().len();
    println!("{secs:.9} {rows}");
}
