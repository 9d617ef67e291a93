//! The names `scaletune build` writes into C and Rust: kernel names checked
//! against both languages' keywords, parameter names made to clash with
//! nothing, and comment text that cannot end its comment.
//!
//! A kernel's name is its symbol, so a name neither language can declare
//! is refused ([`kernel_name_problem`]). A parameter's name is only a name:
//! a tensor or scalar whose name would not compile (a keyword of C, C++ or
//! Rust, a name `<stdint.h>` or the compiler defines, not an identifier) gets
//! another one in both files ([`param_names`]), and the comment above the
//! declaration says which it is.

use std::borrow::Cow;
use std::collections::BTreeSet;

/// C keywords, C11 and C23 (`_Bool` and `bool`, `_Alignas` and `alignas`, ...).
pub const C_KEYWORDS: &[&str] = &[
    "_Alignas",
    "_Alignof",
    "_Atomic",
    "_BitInt",
    "_Bool",
    "_Complex",
    "_Decimal128",
    "_Decimal32",
    "_Decimal64",
    "_Generic",
    "_Imaginary",
    "_Noreturn",
    "_Static_assert",
    "_Thread_local",
    "alignas",
    "alignof",
    "auto",
    "bool",
    "break",
    "case",
    "char",
    "const",
    "constexpr",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "false",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "nullptr",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "struct",
    "switch",
    "thread_local",
    "true",
    "typedef",
    "typeof",
    "typeof_unqual",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
];

/// Rust keywords of every edition, strict and reserved (`gen` from 2024;
/// `async`, `await`, `dyn` and `try` from 2018), which no item or parameter
/// may be named.
pub const RUST_KEYWORDS: &[&str] = &[
    "Self", "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate", "do", "dyn",
    "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "macro",
    "match", "mod", "move", "mut", "override", "priv", "pub", "ref", "return", "self", "static", "struct", "super",
    "trait", "true", "try", "type", "typeof", "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
];

/// C++ keywords and alternative tokens the C ones leave out: the header
/// declares its kernels for C++ too (`extern "C"`), so no parameter is
/// named one.
const CPP_KEYWORDS: &[&str] = &[
    "and",
    "and_eq",
    "asm",
    "bitand",
    "bitor",
    "catch",
    "char16_t",
    "char32_t",
    "char8_t",
    "class",
    "co_await",
    "co_return",
    "co_yield",
    "compl",
    "concept",
    "const_cast",
    "consteval",
    "constinit",
    "decltype",
    "delete",
    "dynamic_cast",
    "explicit",
    "export",
    "friend",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "reinterpret_cast",
    "requires",
    "static_cast",
    "template",
    "this",
    "throw",
    "try",
    "typeid",
    "typename",
    "using",
    "virtual",
    "wchar_t",
    "xor",
    "xor_eq",
];

/// Names the header has defined before its declarations, other than
/// reserved ones: the typedefs and macros of `<stdint.h>` (glibc's, a
/// superset of the standard's), and the macros GCC and Clang predefine in
/// their default GNU modes (`linux`, `unix`, `i386`).
const DEFINED_NAMES: &[&str] = &[
    "INT16_C",
    "INT16_MAX",
    "INT16_MIN",
    "INT16_WIDTH",
    "INT32_C",
    "INT32_MAX",
    "INT32_MIN",
    "INT32_WIDTH",
    "INT64_C",
    "INT64_MAX",
    "INT64_MIN",
    "INT64_WIDTH",
    "INT8_C",
    "INT8_MAX",
    "INT8_MIN",
    "INT8_WIDTH",
    "INTMAX_C",
    "INTMAX_MAX",
    "INTMAX_MIN",
    "INTMAX_WIDTH",
    "INTPTR_MAX",
    "INTPTR_MIN",
    "INTPTR_WIDTH",
    "INT_FAST16_MAX",
    "INT_FAST16_MIN",
    "INT_FAST16_WIDTH",
    "INT_FAST32_MAX",
    "INT_FAST32_MIN",
    "INT_FAST32_WIDTH",
    "INT_FAST64_MAX",
    "INT_FAST64_MIN",
    "INT_FAST64_WIDTH",
    "INT_FAST8_MAX",
    "INT_FAST8_MIN",
    "INT_FAST8_WIDTH",
    "INT_LEAST16_MAX",
    "INT_LEAST16_MIN",
    "INT_LEAST16_WIDTH",
    "INT_LEAST32_MAX",
    "INT_LEAST32_MIN",
    "INT_LEAST32_WIDTH",
    "INT_LEAST64_MAX",
    "INT_LEAST64_MIN",
    "INT_LEAST64_WIDTH",
    "INT_LEAST8_MAX",
    "INT_LEAST8_MIN",
    "INT_LEAST8_WIDTH",
    "PTRDIFF_MAX",
    "PTRDIFF_MIN",
    "PTRDIFF_WIDTH",
    "SIG_ATOMIC_MAX",
    "SIG_ATOMIC_MIN",
    "SIG_ATOMIC_WIDTH",
    "SIZE_MAX",
    "SIZE_WIDTH",
    "UINT16_C",
    "UINT16_MAX",
    "UINT16_WIDTH",
    "UINT32_C",
    "UINT32_MAX",
    "UINT32_WIDTH",
    "UINT64_C",
    "UINT64_MAX",
    "UINT64_WIDTH",
    "UINT8_C",
    "UINT8_MAX",
    "UINT8_WIDTH",
    "UINTMAX_C",
    "UINTMAX_MAX",
    "UINTMAX_WIDTH",
    "UINTPTR_MAX",
    "UINTPTR_WIDTH",
    "UINT_FAST16_MAX",
    "UINT_FAST16_WIDTH",
    "UINT_FAST32_MAX",
    "UINT_FAST32_WIDTH",
    "UINT_FAST64_MAX",
    "UINT_FAST64_WIDTH",
    "UINT_FAST8_MAX",
    "UINT_FAST8_WIDTH",
    "UINT_LEAST16_MAX",
    "UINT_LEAST16_WIDTH",
    "UINT_LEAST32_MAX",
    "UINT_LEAST32_WIDTH",
    "UINT_LEAST64_MAX",
    "UINT_LEAST64_WIDTH",
    "UINT_LEAST8_MAX",
    "UINT_LEAST8_WIDTH",
    "WCHAR_MAX",
    "WCHAR_MIN",
    "WCHAR_WIDTH",
    "WINT_MAX",
    "WINT_MIN",
    "WINT_WIDTH",
    "i386",
    "int16_t",
    "int32_t",
    "int64_t",
    "int8_t",
    "int_fast16_t",
    "int_fast32_t",
    "int_fast64_t",
    "int_fast8_t",
    "int_least16_t",
    "int_least32_t",
    "int_least64_t",
    "int_least8_t",
    "intmax_t",
    "intptr_t",
    "linux",
    "uint16_t",
    "uint32_t",
    "uint64_t",
    "uint8_t",
    "uint_fast16_t",
    "uint_fast32_t",
    "uint_fast64_t",
    "uint_fast8_t",
    "uint_least16_t",
    "uint_least32_t",
    "uint_least64_t",
    "uint_least8_t",
    "uintmax_t",
    "uintptr_t",
    "unix",
];

/// Whether `name` is made of ASCII letters, digits and `_`, and starts with no digit.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether `name` is reserved to the C implementation everywhere (`__x`, `_X`): compilers predefine such macros.
fn is_reserved(name: &str) -> bool {
    let b = name.as_bytes();
    b.first() == Some(&b'_') && b.get(1).is_some_and(|c| *c == b'_' || c.is_ascii_uppercase())
}

/// Why `name` cannot be a kernel's name (its C symbol, the name of its
/// declarations in the header and the Rust file), if it cannot.
pub fn kernel_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("is empty");
    }
    if !is_identifier(name) {
        return Some("is not a C identifier");
    }
    if C_KEYWORDS.contains(&name) {
        return Some("is a C keyword");
    }
    if RUST_KEYWORDS.contains(&name) {
        return Some("is a Rust keyword");
    }
    if CPP_KEYWORDS.contains(&name) {
        return Some("is a C++ keyword (the header declares the kernels for C++ too)");
    }
    if name == "_" {
        return Some("is not a Rust identifier");
    }
    if name == "main" {
        return Some("is the name of a C program's entry point");
    }
    if DEFINED_NAMES.contains(&name) {
        return Some("is defined by <stdint.h>, which the header includes, or predefined by C compilers");
    }
    if name.starts_with("scaletune_") || name.starts_with("__") {
        return Some("uses a reserved prefix (`scaletune_`, `__`)");
    }
    None
}

/// Whether a parameter may be named `name` as it is.
fn usable(name: &str, guard: &str) -> bool {
    is_identifier(name)
        && !is_reserved(name)
        && name != guard
        && ![C_KEYWORDS, CPP_KEYWORDS, RUST_KEYWORDS, DEFINED_NAMES].iter().any(|list| list.contains(&name))
}

/// The parameter names of a declaration, one for each of `names` (the
/// workload's tensors and scalars in ABI order) in both the C header and
/// the Rust file: a name that compiles in both is kept; another gets a
/// trailing `_` (`fn_`, `int_`), after its characters other than letters,
/// digits and `_` become `_` and, if it starts with a digit or a reserved
/// prefix, `arg` is put in front; more `_` are added until it differs from
/// every other parameter's name. `guard` is the header's include guard, a
/// macro no parameter may be named.
pub fn param_names(names: &[&str], guard: &str) -> Vec<String> {
    let mut taken: BTreeSet<String> = names.iter().filter(|n| usable(n, guard)).map(|n| (*n).to_string()).collect();
    names
        .iter()
        .map(|name| {
            if usable(name, guard) {
                return (*name).to_string();
            }
            let mut s: String = name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
            if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) || is_reserved(&s) {
                s.insert_str(0, "arg");
            }
            s.push('_');
            while !usable(&s, guard) || taken.contains(&s) {
                s.push('_');
            }
            taken.insert(s.clone());
            s
        })
        .collect()
}

/// `text` for a one-line comment: control characters (a line break would
/// end a `//` comment, a bare CR is an error in a Rust doc comment) written
/// as escapes (`\n`).
pub fn comment_text(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` for a line of a C comment: [`comment_text`], with `*/` broken
/// (`* /`) so that it cannot close the comment.
pub fn c_comment_text(text: &str) -> Cow<'_, str> {
    match comment_text(text) {
        t if t.contains("*/") => Cow::Owned(t.replace("*/", "* /")),
        t => t,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_and_defined_names_get_a_trailing_underscore_and_every_name_is_unique() {
        let names = [
            "fn",
            "fn_",
            "int",
            "A",
            "self",
            "class",
            "uint16_t",
            "linux",
            "a-b",
            "a_b",
            "1x",
            "__x86_64__",
            "_Bool",
            "K_H",
            "",
            "_",
            "x y",
        ];
        assert_eq!(
            param_names(&names, "K_H"),
            [
                "fn__",
                "fn_",
                "int_",
                "A",
                "self_",
                "class_",
                "uint16_t_",
                "linux_",
                "a_b_",
                "a_b",
                "arg1x_",
                "arg__x86_64___",
                "arg_Bool_",
                "K_H_",
                "arg_",
                "_",
                "x_y_"
            ]
        );
    }

    #[test]
    fn comment_text_escapes_line_breaks_and_breaks_comment_ends() {
        assert_eq!(comment_text("plain"), "plain");
        assert_eq!(comment_text("a*/b\nc\rd\u{7f}é"), "a*/b\\nc\\rd\\u{7f}é");
        assert_eq!(c_comment_text("a*/b\nc"), "a* /b\\nc");
    }

    #[test]
    fn kernel_names_are_refused_for_either_language() {
        let shown: Vec<String> =
            ["fn", "int", "Self", "gen", "_", "main", "int8_t", "linux", "_Bool", "__k", "scaletune_k", "k"]
                .iter()
                .map(|n| format!("{n}: {}", kernel_name_problem(n).unwrap_or("ok")))
                .collect();
        assert_eq!(
            shown,
            [
                "fn: is a Rust keyword",
                "int: is a C keyword",
                "Self: is a Rust keyword",
                "gen: is a Rust keyword",
                "_: is not a Rust identifier",
                "main: is the name of a C program's entry point",
                "int8_t: is defined by <stdint.h>, which the header includes, or predefined by C compilers",
                "linux: is defined by <stdint.h>, which the header includes, or predefined by C compilers",
                "_Bool: is a C keyword",
                "__k: uses a reserved prefix (`scaletune_`, `__`)",
                "scaletune_k: uses a reserved prefix (`scaletune_`, `__`)",
                "k: ok",
            ]
        );
    }
}
