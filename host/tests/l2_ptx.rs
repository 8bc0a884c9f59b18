//! The L2 lesson's kernels and the hierarchy's new probes, checked in the PTX, in the SASS and
//! with ptxas (no GPU): the loads in flight each reader claims, the chase step each shared
//! probe times, and the per-hop window of the partition probe.

use memlab::ptx::inspect::{self, SassInstr};
use memlab::ptx::ptxas;
use memlab::ptx::{self, count_ops, entry_body};
use memlab_contracts::hierarchy::READ_CG_UNROLL;

fn body<'a>(p: &'a ptx::Ptx, kernel: &str) -> &'a str {
    entry_body(p.text, kernel).unwrap_or_else(|| panic!("{} PTX lacks kernel {kernel}", p.arch))
}

/// The sm_90 SASS of every kernel (CUDA 13's ptxas and nvdisasm).
fn sass_90() -> std::collections::BTreeMap<String, Vec<SassInstr>> {
    let p = ptx::ALL.iter().find(|p| p.arch == "sm_90").expect("an sm_90 PTX");
    inspect::sass(p.text, p.arch, false).expect("ptxas and nvdisasm (cargo xtask setup)")
}

/// The general registers an operand list names (`R12`, `R4.64`; not `UR4`, `RZ`).
fn registers(operands: &str) -> Vec<u32> {
    let bytes = operands.as_bytes();
    let mut found = Vec::new();
    for (at, _) in operands.match_indices('R') {
        let after_name = at == 0 || !bytes[at - 1].is_ascii_alphanumeric();
        let digits: String = operands[at + 1..].chars().take_while(char::is_ascii_digit).collect();
        if after_name && !digits.is_empty() {
            found.push(digits.parse().unwrap());
        }
    }
    found
}

/// The most global loads one thread has issued and not yet used at once: each `LDG` adds its
/// destination registers (4 for `.128`, 2 for `.64`); an instruction that reads one of them
/// retires that load.
fn loads_in_flight(instrs: &[SassInstr]) -> usize {
    let (mut pending, mut most) = (Vec::<(u32, u32)>::new(), 0);
    for i in instrs {
        let text = i.text.trim_start();
        // Past the predicate (`@P0`), if any, and the opcode.
        let text = if text.starts_with('@') { text.split_once(char::is_whitespace).map_or("", |t| t.1) } else { text };
        let operands = text.trim_start().split_once(char::is_whitespace).map_or("", |(_, rest)| rest);
        let (first, rest) = operands.split_once(',').unwrap_or((operands, ""));
        pending.retain(|&(reg, n)| !registers(rest).iter().any(|r| (reg..reg + n).contains(r)));
        if i.base() == "LDG" {
            let width = if i.opcode.contains(".128") {
                4
            } else if i.opcode.contains(".64") {
                2
            } else {
                1
            };
            pending.push((registers(first)[0], width));
            most = most.max(pending.len());
        }
    }
    most
}

#[test]
fn readers_keep_the_loads_in_flight_they_claim() {
    let sass = sass_90();
    assert_eq!(loads_in_flight(&sass["read_cg"]), 1, "read_cg: one load in flight per thread");
    assert_eq!(loads_in_flight(&sass["read_cg_unrolled"]), READ_CG_UNROLL, "read_cg_unrolled");
    assert_eq!(loads_in_flight(&sass["hot_stream_read"]), 2, "hot_stream_read: stream and hot vector");
    for p in &ptx::ALL {
        for kernel in ["read_cg", "read_cg_unrolled", "hot_stream_read"] {
            let b = body(p, kernel);
            // 16-byte loads that skip L1, and no other global load.
            assert!(count_ops(b, "ld.global.cg.v4.u32") >= 1, "{}/{kernel}", p.arch);
            assert_eq!(count_ops(b, "ld.global"), count_ops(b, "ld.global.cg.v4.u32"), "{}/{kernel}", p.arch);
        }
        // Four unrolled loads and the one-at-a-time tail.
        assert_eq!(count_ops(body(p, "read_cg_unrolled"), "ld.global.cg.v4.u32"), READ_CG_UNROLL + 1, "{}", p.arch);
        assert_eq!(count_ops(body(p, "hot_stream_read"), "ld.global.cg.v4.u32"), 2, "{}", p.arch);
    }
}

/// The part of a probe's body between its first and last `%clock64` read.
fn timed_window<'a>(b: &'a str, kernel: &str) -> &'a str {
    let (first, last) = (b.find("%clock64").unwrap(), b.rfind("%clock64").unwrap());
    assert!(first < last, "{kernel}: one clock read");
    &b[first..last]
}

#[test]
fn the_index_chase_adds_a_shift_and_an_add_to_every_hop_and_the_address_chase_does_not() {
    for p in &ptx::ALL {
        let address = timed_window(body(p, "chase_shared"), "chase_shared");
        let index = timed_window(body(p, "chase_shared_index"), "chase_shared_index");
        let hops = count_ops(index, "ld.shared.u32");
        assert!(hops >= 1, "{}", p.arch);
        assert_eq!(count_ops(index, "shl.b32"), hops, "{}: one shift per hop", p.arch);
        assert_eq!(count_ops(index, "add.u32"), hops, "{}: one add per hop", p.arch);
        assert!(count_ops(address, "ld.shared.u32") >= 1, "{}", p.arch);
        assert_eq!(count_ops(address, "shl.b32") + count_ops(address, "add.u32"), 0, "{}", p.arch);
    }
    // In SASS: the address chase is LDS after LDS; the index chase puts a LEA before each.
    let sass = sass_90();
    let chain = |kernel: &str| -> String {
        sass[kernel]
            .iter()
            .filter_map(|i| match i.base() {
                "LDS" => Some('L'),
                "LEA" => Some('A'),
                _ => None,
            })
            .collect()
    };
    assert!(chain("chase_shared").contains("LLLLLLLL"), "{}", chain("chase_shared"));
    assert!(chain("chase_shared_index").contains(&"AL".repeat(8)), "{}", chain("chase_shared_index"));
}

#[test]
fn the_partition_probe_times_each_l2_load_until_its_value_is_used() {
    for p in &ptx::ALL {
        let b = body(p, "chase_l2_on_sm");
        assert!(b.contains("%smid"), "{}", p.arch);
        // Each timed hop: clock, L2-only load, the value stored to shared memory, clock.
        let windows: Vec<&str> = b.split("%clock64;").collect();
        let timed = windows.iter().filter(|w| w.contains("ld.global.cg.u64") && w.contains("st.shared.u64")).count();
        assert!(timed >= 1, "{}: no timed hop", p.arch);
        for w in windows.iter().filter(|w| w.contains("st.shared.u64")) {
            let (load, store) = (w.find("ld.global.cg.u64").unwrap(), w.find("st.shared.u64").unwrap());
            assert!(load < store, "{}: the store before the load", p.arch);
        }
        assert_eq!(count_ops(b, "ld.global"), count_ops(b, "ld.global.cg.u64"), "{}: one load kind", p.arch);
        let k = ptxas::run(p.text, p.arch)
            .expect("ptxas (cargo xtask setup)")
            .into_iter()
            .find(|k| k.kernel == "chase_l2_on_sm")
            .unwrap();
        // Shared memory is the launch's dynamic scratch word only.
        assert_eq!((k.smem_bytes, k.stack_bytes, k.spill_stores), (0, 0, 0), "{}: {k:?}", p.arch);
    }
    // In SASS the second clock read waits on the store, which waits on the load.
    let sass = sass_90();
    let ops: Vec<&str> = sass["chase_l2_on_sm"].iter().map(|i| i.base()).collect();
    let pattern = ["LDG", "STS", "CS2R"];
    assert!(ops.windows(3).any(|w| w == pattern), "{ops:?}");
}
