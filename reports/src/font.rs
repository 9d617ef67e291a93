//! The one font of the charts: a TrueType file from the system (Debian's fonts-dejavu-core), loaded at run time and registered with plotters' pure-Rust text renderer.

use crate::ReportError;
use plotters::style::FontStyle;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The family name every chart asks for.
pub const FAMILY: &str = "sans-serif";

/// The environment variable naming another TrueType file.
pub const FONT_ENV: &str = "SCALETUNE_FONT";

/// Where the font is looked for when `SCALETUNE_FONT` is not set.
pub const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

static LOADED: OnceLock<Result<(), String>> = OnceLock::new();

fn load() -> Result<(), String> {
    let candidates: Vec<PathBuf> = match std::env::var_os(FONT_ENV) {
        Some(p) if !p.is_empty() => vec![PathBuf::from(p)],
        _ => FONT_PATHS.iter().map(PathBuf::from).collect(),
    };
    let Some(path) = candidates.iter().find(|p| p.is_file()) else {
        let list: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
        return Err(format!(
            "no font file found (looked for {}): install Debian's fonts-dejavu-core (`make deps`) or set {FONT_ENV}",
            list.join(", ")
        ));
    };
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    // plotters keeps registered fonts for the whole process.
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    plotters::style::register_font(FAMILY, FontStyle::Normal, bytes)
        .map_err(|_| format!("{} is not a TrueType or OpenType font", path.display()))
}

/// Registers the font once per process.
pub fn ensure() -> Result<(), ReportError> {
    LOADED.get_or_init(load).clone().map_err(ReportError::Font)
}
