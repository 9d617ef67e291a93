//! SME instructions in estimated cycles: llvm-mca (LLVM 19) has no model of
//! them, so they are taken out of each block before llvm-mca prices the rest
//! and priced from the target's throughput table (`[sme]` in
//! `configs/targets/`): outer products (`fmopa` on f32 or, widening, f16;
//! the widening `bfmopa` on bf16; `smopa`; ...) at
//! `mopa_per_cycle`, ZA horizontal slice loads and stores at
//! `za_load_per_cycle` and `za_store_per_cycle`, and the other instructions
//! of the ZA and streaming-mode machinery (`smstart`, `smstop`, `zero {za}`,
//! `rdsvl`, `addsvl`, whole-ZA `ldr`/`str`, `mova`) at one per cycle. A
//! block costs what llvm-mca gives its other instructions plus the table's
//! cycles for its SME ones (no overlap assumed between the two).

use scaletune_codegen::target::Sme;

/// The SME instructions of one block, by class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SmeCounts {
    /// Outer products.
    pub mopa: u32,
    /// ZA slice (or whole-array row) loads.
    pub za_load: u32,
    /// ZA slice (or whole-array row) stores.
    pub za_store: u32,
    /// Streaming-mode and ZA control (`smstart`, `zero {za}`, ...).
    pub control: u32,
}

impl SmeCounts {
    /// True if the block has no SME instruction.
    pub fn is_empty(&self) -> bool {
        *self == SmeCounts::default()
    }

    /// Cycles of one execution of these instructions under the table.
    pub fn cycles(&self, table: &Sme) -> f64 {
        f64::from(self.mopa) / table.mopa_per_cycle
            + f64::from(self.za_load) / table.za_load_per_cycle
            + f64::from(self.za_store) / table.za_store_per_cycle
            + f64::from(self.control)
    }
}

/// The class of an SME instruction (llvm-mca text), or `None` for the others.
fn class(line: &str) -> Option<fn(&mut SmeCounts) -> &mut u32> {
    let mut words = line.split_whitespace();
    let op = words.next()?.to_ascii_lowercase();
    let rest = words.collect::<Vec<_>>().join(" ").to_ascii_lowercase();
    let touches_za = rest.contains("za");
    if op.ends_with("mopa") || op.ends_with("mops") {
        return Some(|c| &mut c.mopa);
    }
    if (op.starts_with("ld1") || op == "ldr") && touches_za {
        return Some(|c| &mut c.za_load);
    }
    if (op.starts_with("st1") || op == "str") && touches_za {
        return Some(|c| &mut c.za_store);
    }
    let control = matches!(op.as_str(), "smstart" | "smstop" | "rdsvl" | "addsvl" | "addspl")
        || ((op == "zero" || op.starts_with("mova") || op == "mov") && touches_za)
        || (op == "msr" && rest.contains("svcr"))
        || (op == "mrs" && rest.contains("svcr"));
    control.then_some(|c| &mut c.control)
}

/// Splits a block's instructions into those llvm-mca prices and the SME ones.
pub fn split_block(lines: &[String]) -> (Vec<String>, SmeCounts) {
    let mut rest = Vec::with_capacity(lines.len());
    let mut counts = SmeCounts::default();
    for l in lines {
        match class(l) {
            Some(field) => *field(&mut counts) += 1,
            None => rest.push(l.clone()),
        }
    }
    (rest, counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sme_instructions_are_classified_and_priced_from_the_table() {
        let lines: Vec<String> = [
            "fmopa za0.s, p0/m, p1/m, z0.s, z1.s",
            "fmopa za1.s, p0/m, p1/m, z2.h, z3.h",
            "smopa za2.s, p0/m, p1/m, z4.b, z5.b",
            "bfmopa za3.s, p0/m, p1/m, z6.h, z7.h",
            "mov z6.s, p0/m, za3v.s[w12, 0]",
            "st1w {za0h.s[w12, 0]}, p0, [x0]",
            "ld1w {za1h.s[w13, 0]}, p1/z, [x2]",
            "ld1w {z0.s}, p0/z, [x0]",
            "smstart sm",
            "zero {za}",
            "add x0, x0, #4",
        ]
        .map(String::from)
        .to_vec();
        let (rest, c) = split_block(&lines);
        assert_eq!(rest, ["ld1w {z0.s}, p0/z, [x0]", "add x0, x0, #4"]);
        // The widening fmopa, bfmopa and smopa are outer products like the f32
        // one (one rate for all, see the target files); a vertical slice move is control.
        assert_eq!(c, SmeCounts { mopa: 4, za_load: 1, za_store: 1, control: 3 });
        let t = scaletune_codegen::target::Target::load("apple-m4").expect("target");
        let table = Sme { mopa_per_cycle: 2.0, za_load_per_cycle: 0.5, za_store_per_cycle: 1.0, ..t.sme.expect("sme") };
        assert_eq!(c.cycles(&table), 2.0 + 2.0 + 1.0 + 3.0);
    }
}
