//! The BSON types a Rust type serializes to, where its name says so unambiguously: what a
//! validator may require of a tree's ids (`pattern_core::Tree::ID_TYPES`).

use syn::{PathArguments, Type};

/// The `pattern_core::spec::BsonType` variants `ty` is stored as: `String` or `str` (also behind a
/// reference): `String`; the integers: `Int` and `Long` (serde's BSON writes the narrow ones
/// as Int32, the wide ones as Int64, and the server holds the two equal); `ObjectId`:
/// `ObjectId`. Empty for any other type, and when `serialized_as_is` is false (a field with
/// `#[serde(with = ...)]` or `serialize_with`, which writes what it likes).
pub(crate) fn bson_types(ty: &Type, serialized_as_is: bool) -> &'static [&'static str] {
    if !serialized_as_is {
        return &[];
    }
    match ty {
        Type::Group(g) => bson_types(&g.elem, true),
        Type::Paren(p) => bson_types(&p.elem, true),
        Type::Reference(r) => bson_types(&r.elem, true),
        Type::Path(p) if p.qself.is_none() => {
            let Some(last) = p.path.segments.last() else {
                return &[];
            };
            if !matches!(last.arguments, PathArguments::None) {
                return &[];
            }
            match last.ident.to_string().as_str() {
                "String" | "str" => &["String"],
                "i8" | "i16" | "i32" | "i64" | "isize" | "u8" | "u16" | "u32" | "u64" | "usize" => {
                    &["Int", "Long"]
                }
                "ObjectId" => &["ObjectId"],
                _ => &[],
            }
        }
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::bson_types;
    use syn::{parse_quote, Type};

    #[test]
    fn only_names_that_say_it() {
        let cases: [(Type, &[&str]); 9] = [
            (parse_quote!(String), &["String"]),
            (parse_quote!(&'static str), &["String"]),
            (parse_quote!(std::string::String), &["String"]),
            (parse_quote!(i64), &["Int", "Long"]),
            (parse_quote!(u8), &["Int", "Long"]),
            (parse_quote!(bson::oid::ObjectId), &["ObjectId"]),
            (parse_quote!(Option<String>), &[]),
            (parse_quote!(Uuid), &[]),
            (parse_quote!(f64), &[]),
        ];
        for (ty, want) in cases {
            assert_eq!(bson_types(&ty, true), want, "{}", quote::quote!(#ty));
        }
        assert_eq!(bson_types(&parse_quote!(String), false), &[] as &[&str]);
    }
}
