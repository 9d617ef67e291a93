//! The kernel manifest of `scaletune build`: `[[kernel]]` tables (name, workload, target, optional vl and record), checked and resolved.

use super::names::kernel_name_problem;
use super::BuildError;
use scaletune_codegen::target::Target;
use scaletune_space::workload::{Workload, WorkloadRef};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use toml::Spanned;

/// The keys a `[[kernel]]` table may have.
const KEYS: &[&str] = &["name", "workload", "target", "vl", "record"];

/// One kernel to build.
#[derive(Clone, Debug)]
pub struct KernelSpec {
    /// The C symbol.
    pub name: String,
    /// The workload reference as written.
    pub workload_ref: String,
    /// The workload.
    pub workload: Workload,
    /// The target.
    pub target: Target,
    /// The vector lengths the choice is judged on (`None`: those of the latest comparable record).
    pub vl: Option<Vec<u32>>,
    /// A pinned record.
    pub record: Option<i64>,
    /// 1-based line of the `[[kernel]]` header.
    pub line: usize,
}

/// A checked manifest.
#[derive(Clone, Debug)]
pub struct Manifest {
    /// The file, for messages.
    pub file: String,
    /// Kernels in manifest order.
    pub kernels: Vec<KernelSpec>,
}

type RawTable = BTreeMap<Spanned<String>, Spanned<toml::Value>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    #[serde(default)]
    kernel: Vec<Spanned<RawTable>>,
}

/// 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

/// A relative workload or target file reference, taken from the manifest's directory.
fn relative_to(dir: &Path, reference: &str) -> String {
    let (name, rest) = match reference.rsplit_once(':') {
        Some((n, r)) if r.contains('=') => (n, Some(r)),
        _ => (reference, None),
    };
    if !name.ends_with(".toml") || Path::new(name).is_absolute() {
        return reference.to_string();
    }
    let joined = dir.join(name).display().to_string();
    match rest {
        Some(r) => format!("{joined}:{r}"),
        None => joined,
    }
}

/// Reads and checks a manifest file.
pub fn load(path: &Path) -> Result<Manifest, BuildError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|error| BuildError::Io { path: file.clone(), error })?;
    parse(&text, &file, path.parent().unwrap_or(Path::new(".")))
}

/// Checks a manifest's text; `dir` is where relative workload and target files are found.
pub fn parse(text: &str, file: &str, dir: &Path) -> Result<Manifest, BuildError> {
    let raw: RawManifest = toml::from_str(text).map_err(|e| BuildError::ManifestSyntax {
        file: file.to_string(),
        line: e.span().map_or(1, |s| line_of(text, s.start)),
        message: e.message().to_string(),
    })?;
    if raw.kernel.is_empty() {
        return Err(BuildError::Manifest {
            file: file.to_string(),
            line: 1,
            kernel: "-".into(),
            field: "kernel".into(),
            message: "no [[kernel]] table".into(),
        });
    }
    let mut kernels: Vec<KernelSpec> = Vec::new();
    for (idx, table) in raw.kernel.iter().enumerate() {
        let header_line = line_of(text, table.span().start);
        let table = table.get_ref();
        let get = |key: &str| table.iter().find(|(k, _)| k.get_ref() == key).map(|(_, v)| v);
        let name_value = get("name").and_then(|v| v.get_ref().as_str()).map(str::to_string);
        let label = name_value.clone().unwrap_or_else(|| format!("#{}", idx + 1));
        let err = |line: usize, field: &str, message: String| BuildError::Manifest {
            file: file.to_string(),
            line,
            kernel: label.clone(),
            field: field.to_string(),
            message,
        };
        for k in table.keys() {
            if !KEYS.contains(&k.get_ref().as_str()) {
                return Err(err(
                    line_of(text, k.span().start),
                    k.get_ref(),
                    format!("unknown key (expected {})", KEYS.join(", ")),
                ));
            }
        }
        let line = |key: &str| get(key).map_or(header_line, |v| line_of(text, v.span().start));
        let string = |key: &str| -> Result<String, BuildError> {
            match get(key).map(|v| v.get_ref()) {
                None => Err(err(header_line, key, "missing".into())),
                Some(toml::Value::String(s)) => Ok(s.clone()),
                Some(v) => Err(err(line(key), key, format!("expected a string, found {}", v.type_str()))),
            }
        };
        let name = string("name")?;
        if let Some(problem) = kernel_name_problem(&name) {
            return Err(err(line("name"), "name", format!("`{name}` {problem}")));
        }
        if let Some(first) = kernels.iter().find(|k| k.name == name) {
            return Err(err(line("name"), "name", format!("duplicate kernel name (first at line {})", first.line)));
        }
        let workload_ref = string("workload")?;
        let workload = WorkloadRef::parse(&relative_to(dir, &workload_ref))
            .and_then(|r| r.load())
            .map_err(|e| err(line("workload"), "workload", e.to_string()))?;
        let target_name = string("target")?;
        let target = Target::load(&relative_to(dir, &target_name))
            .map_err(|e| err(line("target"), "target", e.to_string().replace('\n', " ")))?;
        let vl = match get("vl").map(|v| v.get_ref()) {
            None => None,
            Some(toml::Value::Array(items)) if !items.is_empty() => {
                let mut vls = Vec::new();
                for item in items {
                    let bits = item
                        .as_integer()
                        .and_then(|i| u32::try_from(i).ok())
                        .ok_or_else(|| err(line("vl"), "vl", format!("`{item}` is not a vector length in bits")))?;
                    if let Err(e) = target.vscale_for_vl(bits) {
                        // A scalable target may be measured at other lengths (a 128-bit Neoverse V1, say).
                        let g = target.caps.granule_bits;
                        let other = target.caps.scalable
                            && bits.is_power_of_two()
                            && bits.is_multiple_of(g)
                            && (128..=2048).contains(&bits);
                        if !other {
                            return Err(err(line("vl"), "vl", e.to_string()));
                        }
                    }
                    vls.push(bits);
                }
                vls.sort_unstable();
                vls.dedup();
                Some(vls)
            }
            Some(v) => {
                return Err(err(line("vl"), "vl", format!("expected a non-empty array of bits, found `{v}`")));
            }
        };
        let record = match get("record").map(|v| v.get_ref()) {
            None => None,
            Some(toml::Value::Integer(n)) if *n > 0 => Some(*n),
            Some(v) => return Err(err(line("record"), "record", format!("expected a record id, found `{v}`"))),
        };
        kernels.push(KernelSpec { name, workload_ref, workload, target, vl, record, line: header_line });
    }
    Ok(Manifest { file: file.to_string(), kernels })
}
