//! Every shipped target (`codegen::target::SHIPPED`) loads and is consistent:
//! its triple matches its architecture, LLVM knows its CPU, features and
//! llvm-mca model, its vector lengths are valid, its run commands exist, and a
//! predicated vector kernel compiled for it runs (natively or under its QEMU
//! command) at each of its default vector lengths with the expected result.

mod llvm_util;

use llvm_util::{compile_o3, lanes32, link, programs, run, vadd_driver, vadd_expected, VADD_N};
use scaletune_codegen::target::{Arch, Target, SHIPPED};
use std::collections::BTreeSet;
use std::process::Command;

/// The CPUs and features `llc-19` lists for a triple (`-mcpu=help`), the
/// same LLVM 19 that scaletune links.
fn llvm_knows(triple: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let out = Command::new("llc-19")
        .args([&format!("-mtriple={triple}"), "-mcpu=help"])
        .output()
        .expect("llc-19 runs (make deps installs llvm-19)");
    // The lists go to stderr or stdout depending on the LLVM build.
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let (mut cpus, mut features) = (BTreeSet::new(), BTreeSet::new());
    let mut section = 0;
    for line in text.lines() {
        if line.starts_with("Available CPUs") {
            section = 1;
        } else if line.starts_with("Available features") {
            section = 2;
        } else if let Some(word) = line.split_whitespace().next() {
            if line.starts_with("  ") && line.contains(" - ") {
                match section {
                    1 => cpus.insert(word.to_string()),
                    2 => features.insert(word.to_string()),
                    _ => false,
                };
            }
        }
    }
    assert!(cpus.len() > 5 && features.len() > 5, "cannot read llc-19 -mcpu=help for {triple}:\n{text}");
    (cpus, features)
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file())).unwrap_or(false)
}

#[test]
fn every_shipped_target_loads_and_is_consistent() {
    let names: Vec<&str> = SHIPPED.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["host", "neon", "neoverse-v1", "neoverse-v2", "a64fx", "sve-generic", "rvv", "sme", "apple-m4"]);
    for name in names {
        let t = Target::load(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(t.name, name, "the file's name field");
        let arch_prefix = match t.arch {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
            Arch::Riscv64 => "riscv64",
        };
        assert!(t.triple.starts_with(arch_prefix), "{name}: triple {} for {:?}", t.triple, t.arch);

        let (cpus, features) = llvm_knows(&t.triple);
        assert!(cpus.contains(&t.cpu), "{name}: LLVM does not know CPU `{}`", t.cpu);
        if let Some(m) = &t.mca_cpu {
            assert!(cpus.contains(m), "{name}: LLVM does not know the llvm-mca model `{m}`");
        }
        if name != "host" {
            for f in t.features.split(',') {
                // `+name` enables a feature, `-name` disables one (a tuning flag).
                let f = f
                    .strip_prefix('+')
                    .or_else(|| f.strip_prefix('-'))
                    .unwrap_or_else(|| panic!("{name}: feature `{f}` is not `+name` or `-name`"));
                assert!(features.contains(f), "{name}: LLVM does not know feature `{f}`");
            }
        }

        // Vector capabilities and vector lengths.
        let c = &t.caps;
        assert!(!t.default_vl_bits.is_empty(), "{name}: no default VL");
        for &vl in &t.default_vl_bits {
            let vs = t.vscale_for_vl(vl).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(vs * c.granule_bits, vl, "{name}: vscale {vs} at VL {vl}");
        }
        assert!(c.vscale_values.windows(2).all(|w| w[0] < w[1]), "{name}: vscale values ascend");
        let has = |f: &str| t.features.split(',').any(|x| x == format!("+{f}"));
        match t.arch {
            Arch::Aarch64 => {
                assert_eq!(c.granule_bits, 128, "{name}");
                assert_eq!(c.scalable, has("sve"), "{name}: scalable iff +sve");
                if c.scalable {
                    assert!(c.vscale_values.iter().all(|v| v.is_power_of_two() && *v <= 16), "{name}: {c:?}");
                } else {
                    assert_eq!(c.vscale_values, [1], "{name}: NEON is 128 bits");
                    assert!(!c.has_gather, "{name}: NEON has no gathers");
                }
            }
            Arch::Riscv64 => {
                assert!(c.scalable && has("v") && c.granule_bits == 64, "{name}: {c:?}");
            }
            Arch::X86_64 => assert!(!c.scalable && c.vscale_values.len() == 1, "{name}: {c:?}"),
        }
        let kinds = t.vector_kinds();
        assert_eq!(kinds.first().map(|k| &k.1), Some(c), "{name}: the first vector kind is the target's own");
        // SME: streaming code at the [sme] vector lengths, without gathers.
        if let Some(sme) = &t.sme {
            assert!(has("sme") && sme.caps.has_sme && !sme.caps.has_gather, "{name}: {sme:?}");
            assert_eq!(kinds.last().map(|k| &k.1), Some(&sme.caps), "{name}: SME is the last kind");
        }

        // Run commands: the compiler, and QEMU for every non-host target,
        // with the VL placeholder where the VL can vary.
        assert!(on_path(&t.cc[0]), "{name}: `{}` is not on PATH", t.cc[0]);
        match (t.arch, t.qemu_command(256)) {
            (Arch::X86_64, q) => assert!(q.is_none(), "{name} runs natively"),
            (arch, Some(q)) => {
                let want = if arch == Arch::Aarch64 { "qemu-aarch64" } else { "qemu-riscv64" };
                assert_eq!(q[0], want, "{name}");
                assert!(on_path(want), "{name}: `{want}` is not on PATH");
                if c.scalable {
                    assert!(q.iter().any(|a| a.contains("256") || a.contains("=32")), "{name}: VL not passed in {q:?}");
                }
            }
            (_, None) => panic!("{name}: no QEMU command"),
        }
    }
}

/// `y = 1.5 * (a + b)` with a predicated loop of full vectors, compiled for
/// every shipped target, whose assembly shows the target's vector ISA, run
/// at each default VL; the 64 elements after the end stay untouched.
#[test]
fn a_vector_kernel_runs_on_every_shipped_target() {
    let (driver, want) = (vadd_driver(), vadd_expected());
    let targets = Target::shipped().expect("shipped targets load");
    std::thread::scope(|s| {
        for t in &targets {
            let (driver, want) = (&driver, &want);
            s.spawn(move || {
                let art = compile_o3(&programs::vadd(VADD_N, lanes32(t)), t);
                let asm = &art.asm;
                let isa = match t.arch {
                    Arch::Aarch64 if t.caps.scalable => asm.contains("whilelo") && asm.contains("ld1w"),
                    Arch::Aarch64 => asm.contains("fadd\tv") && !asm.contains("whilelo"),
                    Arch::Riscv64 => asm.contains("vsetvli") && asm.contains("vle32.v"),
                    Arch::X86_64 => asm.contains("vaddps") || asm.contains("addps"),
                };
                assert!(isa, "{}: no {:?} vector code in\n{asm}", t.name, t.arch);
                let dir = tempfile::tempdir().expect("tempdir");
                let exe = link(t, &art.object, driver, dir.path());
                for &vl in &t.default_vl_bits {
                    let got = run(t, &exe, vl);
                    assert!(&got == want, "{} at VL {vl}: wrong output\n{got}", t.name);
                }
            });
        }
    });
}
