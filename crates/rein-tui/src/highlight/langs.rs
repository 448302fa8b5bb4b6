//! What each language family looks like to the lexer: keywords, types,
//! comment and string forms.

use super::Lang;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tick {
    No,
    Escaped,
    Raw,
}

pub(super) struct Spec {
    /// Space-separated.
    pub(super) keywords: &'static str,
    pub(super) types: &'static str,
    pub(super) line_comments: &'static [&'static str],
    pub(super) block: Option<(&'static str, &'static str)>,
    pub(super) nested: bool,
    pub(super) quotes: &'static [char],
    pub(super) multiline_quotes: bool,
    pub(super) backslash: bool,
    pub(super) raw_single: bool,
    pub(super) triple: bool,
    pub(super) backtick: Tick,
    pub(super) cap_types: bool,
    pub(super) nocase: bool,
    pub(super) hash_word: bool,
    pub(super) functions: bool,
}

pub(super) const BASE: Spec = Spec {
    keywords: "",
    types: "",
    line_comments: &["//"],
    block: Some(("/*", "*/")),
    nested: false,
    quotes: &['"', '\''],
    multiline_quotes: false,
    backslash: true,
    raw_single: false,
    triple: false,
    backtick: Tick::No,
    cap_types: false,
    nocase: false,
    hash_word: false,
    functions: true,
};

pub(super) const RUST: Spec = Spec {
    keywords: "as async await break const continue crate dyn else enum extern false fn for if \
        impl in let loop match mod move mut pub ref return self Self static struct super \
        trait true type unsafe use where while yield union macro_rules",
    types: "i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f32 f64 bool char str",
    nested: true,
    quotes: &['"'],
    multiline_quotes: true,
    cap_types: true,
    ..BASE
};

pub(super) const PYTHON: Spec = Spec {
    keywords: "False None True and as assert async await break class continue def del elif else \
        except finally for from global if import in is lambda nonlocal not or pass raise \
        return try while with yield match case self",
    types: "int float str bool list dict set tuple bytes object type complex frozenset \
        bytearray",
    line_comments: &["#"],
    block: None,
    triple: true,
    ..BASE
};

pub(super) const JS_KW: &str = "break case catch class const continue debugger default delete do else export \
        extends finally for function if import in instanceof let new of return super \
        switch this throw try typeof var void while with yield async await static get \
        set true false null undefined from";

pub(super) const JS: Spec = Spec {
    keywords: JS_KW,
    backtick: Tick::Escaped,
    cap_types: true,
    ..BASE
};

pub(super) const TS: Spec = Spec {
    keywords: "break case catch class const continue debugger default delete do else export \
        extends finally for function if import in instanceof let new of return super \
        switch this throw try typeof var while with yield async await static get set \
        true false null undefined from interface type enum implements private protected \
        public readonly abstract declare namespace keyof as is",
    types: "string number boolean any unknown never void object symbol bigint",
    backtick: Tick::Escaped,
    cap_types: true,
    ..BASE
};

pub(super) const GO: Spec = Spec {
    keywords: "break case chan const continue default defer else fallthrough for func go goto \
        if import interface map package range return select struct switch type var true \
        false nil iota",
    types: "bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 \
        rune string uint uint8 uint16 uint32 uint64 uintptr any",
    backtick: Tick::Raw,
    cap_types: true,
    ..BASE
};

pub(super) const C_TYPES: &str = "char double float int long short signed unsigned void bool size_t \
        ssize_t int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t wchar_t FILE";

pub(super) const C: Spec = Spec {
    keywords: "auto break case const continue default do else enum extern for goto if inline \
        register restrict return sizeof static struct switch typedef union volatile \
        while NULL true false",
    types: C_TYPES,
    ..BASE
};

pub(super) const CPP: Spec = Spec {
    keywords: "auto break case const continue default do else enum extern for goto if inline \
        register return sizeof static struct switch typedef union volatile while NULL \
        true false alignas alignof catch class constexpr const_cast decltype delete \
        dynamic_cast explicit export friend mutable namespace new noexcept nullptr \
        operator private protected public reinterpret_cast static_assert static_cast \
        template this throw try typeid typename using virtual override final co_await \
        co_return co_yield concept requires",
    types: C_TYPES,
    ..BASE
};

pub(super) const JAVA: Spec = Spec {
    keywords: "abstract assert break case catch class const continue default do else enum \
        extends final finally for goto if implements import instanceof interface native \
        new package private protected public return static strictfp super switch \
        synchronized this throw throws transient try volatile while var record sealed \
        permits yield true false null",
    types: "boolean byte char double float int long short void",
    triple: true,
    cap_types: true,
    ..BASE
};

pub(super) const SH: Spec = Spec {
    keywords: "if then else elif fi for while until do done case esac function in return export \
        local readonly declare unset shift exit break continue select time",
    line_comments: &["#"],
    block: None,
    multiline_quotes: true,
    raw_single: true,
    backtick: Tick::Escaped,
    hash_word: true,
    ..BASE
};

pub(super) const JSON: Spec = Spec {
    keywords: "true false null",
    quotes: &['"'],
    functions: false,
    ..BASE
};

pub(super) const TOML: Spec = Spec {
    keywords: "true false inf nan",
    line_comments: &["#"],
    block: None,
    raw_single: true,
    triple: true,
    functions: false,
    ..BASE
};

pub(super) const YAML: Spec = Spec {
    keywords: "true false null yes no on off",
    line_comments: &["#"],
    block: None,
    raw_single: true,
    nocase: true,
    hash_word: true,
    functions: false,
    ..BASE
};

pub(super) const SQL: Spec = Spec {
    keywords: "select from where and or not insert into values update set delete create table \
        drop alter add column index primary key foreign references join inner left right \
        outer full cross on as group by order having limit offset union all distinct \
        case when then else end is null like in between exists default unique check \
        constraint view trigger begin commit rollback transaction if returning with \
        recursive asc desc true false cascade replace conflict do nothing",
    types: "int integer bigint smallint text varchar char boolean real double float decimal \
        numeric date time timestamp blob serial json jsonb uuid",
    line_comments: &["--"],
    backslash: false,
    raw_single: true,
    nocase: true,
    ..BASE
};

pub(super) fn spec_of(lang: Lang) -> &'static Spec {
    match lang {
        Lang::Rust => &RUST,
        Lang::Python => &PYTHON,
        Lang::Js => &JS,
        Lang::Ts => &TS,
        Lang::Go => &GO,
        Lang::C => &C,
        Lang::Cpp => &CPP,
        Lang::Java => &JAVA,
        Lang::Sh => &SH,
        Lang::Json => &JSON,
        Lang::Toml => &TOML,
        Lang::Yaml => &YAML,
        Lang::Sql => &SQL,
        // Handled elsewhere; a harmless spec for completeness.
        Lang::Diff | Lang::Html => &BASE,
    }
}
