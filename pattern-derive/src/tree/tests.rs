//! Parser tests: `parse_quote!` input in, the model or every error message out.

use quote::ToTokens;
use syn::{parse_quote, DeriveInput};

use super::{expand, fallback, id_field, stub_id_ty, Container};
use crate::attr::tree::{Model, FIELDS};
use crate::check::tree as check;

/// The model of `input`, and what reading and checking it found.
fn read(input: &DeriveInput) -> (Container<'_>, syn::Result<()>) {
    crate::read(input, check)
}

/// The checked model of `input`, or its errors.
fn parse(input: &DeriveInput) -> syn::Result<Container<'_>> {
    let (t, checked) = read(input);
    checked.map(|()| t)
}

fn errors(input: DeriveInput) -> Vec<String> {
    crate::errors(&input, check)
}

/// The model's collection, model and `max_depth`.
fn keys(t: &Container) -> (String, Model, Option<u32>) {
    let a = &t.attrs;
    let collection = a.collection.value().unwrap().value.clone();
    (
        collection,
        *a.model.value().unwrap(),
        a.max_depth.value().copied(),
    )
}

/// The names of the model's fields.
fn names(t: &Container) -> [String; 6] {
    t.attrs.names().map(|n| n.value)
}

/// The id field's ident.
fn id(t: &Container) -> String {
    id_field(t).unwrap().ident.to_string()
}

const METHODS: [&str; 21] = [
    "ensure_indexes",
    "ensure_validator",
    "insert_root",
    "insert_child",
    "save",
    "get",
    "parent",
    "children",
    "siblings",
    "ancestors",
    "descendants",
    "depth",
    "is_descendant",
    "move_to",
    "delete_subtree",
    "delete_node",
    "roots",
    "walk",
    "verify",
    "repair",
    "index_report",
];

#[test]
fn reads_the_model_with_defaults() {
    let input: DeriveInput = parse_quote! {
        #[tree(collection = "categories", model = "parent_refs")]
        struct Category {
            #[serde(rename = "_id")]
            name: String,
            description: Option<String>,
        }
    };
    let t = parse(&input).unwrap();
    assert_eq!(keys(&t), ("categories".to_owned(), Model::ParentRefs, None));
    assert_eq!(names(&t), FIELDS.map(String::from));
    assert_eq!(id(&t), "name");
    let code = expand(&t).to_string();
    let parts = [
        "impl :: pattern_core :: tree :: Tree for Category",
        "collection : \"categories\"",
        "model : :: pattern_core :: spec :: TreeModel :: ParentRefs",
        "fields : :: pattern_core :: spec :: TreeFields { parent : \"parent\" , children : \"children\" , ancestors : \
         \"ancestors\" , path : \"path\" , left : \"left\" , right : \"right\" , }",
        "max_depth : :: core :: option :: Option :: None",
        "type Id = String",
        "fn id (& self) -> & Self :: Id { & self . name }",
        "pub async fn insert_root < __PatternS > (& self , store : & __PatternS) -> :: pattern_core :: Result < () > \
         where __PatternS : :: pattern_core :: store :: Store , \
         { :: pattern_core :: tree :: insert_root :: < Self , __PatternS > (store , self ,) . await }",
        "pub async fn insert_child < __PatternS , __PatternQ > (& self , store : & __PatternS , parent : & __PatternQ ,)",
        ":: pattern_core :: tree :: insert_child :: < Self , __PatternS , __PatternQ > (store , parent , self ,)",
        "pub async fn children < __PatternS , __PatternQ > (store : & __PatternS , id : & __PatternQ ,) -> \
         :: pattern_core :: Result < :: std :: vec :: Vec < Self > > where __PatternS : :: pattern_core :: store :: Store , __PatternQ : :: pattern_core :: spec :: IdRef < String > + ? :: core :: marker :: Sized ,",
        "pub async fn get < __PatternS , __PatternQ > (store : & __PatternS , id : & __PatternQ ,) -> \
         :: pattern_core :: Result < :: core :: option :: Option < Self > >",
        "id : & __PatternQ , max_depth : :: core :: option :: Option < u32 > ,",
        "id : & __PatternQ , of : & __PatternQ ,",
        "id : & __PatternQ , new_parent : :: core :: option :: Option < & __PatternQ > ,",
        "Result < u64 >",
        "Result < :: std :: vec :: Vec < (u32 , Self) > >",
        "Result < :: pattern_core :: tree :: Verified >",
        "Result < :: pattern_core :: tree :: Repair >",
        "const ID_TYPES : & 'static [:: pattern_core :: spec :: BsonType] = & [:: pattern_core :: spec :: BsonType :: String] ;",
    ];
    crate::assert_contains(&code, &parts);
    for m in METHODS {
        let call = format!(":: pattern_core :: tree :: {m} :: < Self , __PatternS > (store");
        let by_id =
            format!(":: pattern_core :: tree :: {m} :: < Self , __PatternS , __PatternQ > (store");
        assert!(
            code.contains(&call) || code.contains(&by_id),
            "{call} not in {code}"
        );
    }
    assert_eq!(code.matches("# [doc =").count(), METHODS.len());
    assert!(!code.contains("VALIDATE"), "{code}");
}

#[test]
fn every_key() {
    let input: DeriveInput = parse_quote! {
        #[tree(collection = "c", model = "nested_set", max_depth = 7)]
        #[tree(parent = "up", left = "lft", right = "rgt")]
        #[serde(rename_all = "camelCase")]
        struct Node {
            #[tree(id)]
            #[serde(rename = "_id")]
            node_id: i64,
            display_name: String,
        }
    };
    let t = parse(&input).unwrap();
    assert_eq!((keys(&t).1, keys(&t).2), (Model::NestedSet, Some(7)));
    assert_eq!(
        names(&t),
        ["up", "children", "ancestors", "path", "lft", "rgt"].map(String::from)
    );
    let code = expand(&t).to_string();
    let parts = [
        "TreeModel :: NestedSet",
        "parent : \"up\" , children : \"children\"",
        "left : \"lft\" , right : \"rgt\"",
        "max_depth : :: core :: option :: Option :: Some (7u32)",
        "type Id = i64",
        "& self . node_id",
    ];
    crate::assert_contains(&code, &parts);
}

#[test]
fn every_model_and_its_renames() {
    for (model, key) in [
        ("parent_refs", "parent"),
        ("child_refs", "children"),
        ("ancestors", "ancestors"),
        ("ancestors", "parent"),
        ("materialized_path", "path"),
        ("nested_set", "parent"),
        ("nested_set", "left"),
        ("nested_set", "right"),
    ] {
        let attr: syn::Attribute = syn::parse_str::<DeriveInput>(&format!(
            "#[tree(collection = \"c\", model = \"{model}\", {key} = \"renamed\")] struct X;"
        ))
        .unwrap()
        .attrs
        .remove(0);
        let input: DeriveInput = parse_quote! {
            #attr
            struct Node {
                #[serde(rename = "_id")]
                id: u32,
                // The seed's name of the renamed field is free for a field of the struct.
                #[serde(rename = #key)]
                other: u32,
            }
        };
        let t = parse(&input).unwrap_or_else(|e| panic!("{model} {key}: {e}"));
        assert_eq!(keys(&t).1.name(), model);
        let i = FIELDS.iter().position(|f| *f == key).unwrap();
        assert_eq!(names(&t)[i], "renamed");
    }
}

#[test]
fn the_id_is_the_field_stored_as_id() {
    let input: DeriveInput = parse_quote! {
        #[tree(collection = "c", model = "child_refs")]
        struct Node {
            title_text: String,
            _id: bson::oid::ObjectId,
        }
    };
    let t = parse(&input).unwrap();
    assert_eq!(id(&t), "_id");
    assert_eq!(
        id_field(&t).unwrap().ty.to_token_stream().to_string(),
        "bson :: oid :: ObjectId"
    );
    // As serde does, camelCase makes `_id` "id": only a rename stores it as `_id` then.
    let input: DeriveInput = parse_quote! {
        #[tree(collection = "c", model = "child_refs")]
        #[serde(rename_all = "camelCase")]
        struct Node {
            _id: bson::oid::ObjectId,
            #[serde(rename = "_id")]
            node_id: u32,
        }
    };
    assert_eq!(id(&parse(&input).unwrap()), "node_id");
}

#[test]
fn id_mistakes() {
    let input: DeriveInput = parse_quote! {
        #[tree(collection = "c", model = "parent_refs")]
        struct Node {
            id: u32,
        }
    };
    assert_eq!(
        errors(input),
        ["a tree node needs its id stored as `_id`: add #[serde(rename = \"_id\")] to the id field"]
    );
    let input: DeriveInput = parse_quote! {
        #[tree(collection = "c", model = "parent_refs")]
        struct Node {
            #[tree(id)]
            id: u32,
        }
    };
    assert_eq!(
        errors(input),
        ["the #[tree(id)] field must be stored as `_id`: add #[serde(rename = \"_id\")]"]
    );
    let input: DeriveInput = parse_quote! {
        #[tree(collection = "c", model = "parent_refs")]
        struct Node {
            #[tree(id)]
            #[serde(rename = "_id")]
            id: u32,
            #[tree(id)]
            #[serde(rename = "_id")]
            other: u32,
        }
    };
    assert_eq!(
        errors(input),
        [
            "only one field may be #[tree(id)]; `id` already is",
            "`id` and `other` are both stored as `_id`; a node has one id",
        ]
    );
    let input: DeriveInput = parse_quote! {
        #[tree(collection = "c", model = "parent_refs")]
        struct Node {
            #[tree(id, key)]
            #[serde(rename = "_id")]
            id: u32,
        }
    };
    assert_eq!(
        errors(input),
        ["unknown key `key` in #[tree(...)]; expected one of: `id`"]
    );
}

#[test]
fn clashes_with_the_model_fields() {
    let input: DeriveInput = parse_quote! {
        #[tree(collection = "c", model = "nested_set", right = "title")]
        struct Node {
            #[serde(rename = "_id")]
            id: u32,
            parent: Option<u32>,
            title: String,
            #[serde(rename = "left")]
            l: u32,
            // Not a field of nested sets.
            path: String,
        }
    };
    assert_eq!(
        errors(input),
        [
            "field `parent` is stored as \"parent\", where the nested_set model keeps the parent's id in every \
             node; rename the field (#[serde(rename = \"...\")]) or the model's (#[tree(parent = \"...\")])",
            "field `title` is stored as \"title\", where the nested_set model keeps the right number of the nested \
             set in every node; rename the field (#[serde(rename = \"...\")]) or the model's (#[tree(right = \
             \"...\")])",
            "field `l` is stored as \"left\", where the nested_set model keeps the left number of the nested set in \
             every node; rename the field (#[serde(rename = \"...\")]) or the model's (#[tree(left = \"...\")])",
        ]
    );
}

#[test]
fn model_field_names() {
    let input: DeriveInput = parse_quote! {
        #[tree(collection = "c", model = "nested_set", left = "n", right = "n", parent = "_id")]
        struct Node {
            #[serde(rename = "_id")]
            id: u32,
        }
    };
    assert_eq!(
        errors(input),
        [
            "the parent field cannot be stored as `_id` (the pattern owns `_id`)",
            "the left field and the right field are both stored as \"n\"",
        ]
    );
    let input: DeriveInput = parse_quote! {
        #[tree(collection = "c", model = "materialized_path", path = "a.b")]
        struct Node {
            #[serde(rename = "_id")]
            id: u32,
        }
    };
    assert_eq!(
        errors(input),
        ["invalid MongoDB field name \"a.b\": it must not contain `.`"]
    );
}

#[test]
fn renames_the_model_does_not_use() {
    let input: DeriveInput = parse_quote! {
        #[tree(collection = "c", model = "parent_refs", children = "kids", path = "p", left = "l")]
        #[tree(ancestors = "a")]
        struct Node {
            #[serde(rename = "_id")]
            id: u32,
        }
    };
    assert_eq!(
        errors(input),
        [
            "the parent_refs model keeps no `children` field (only child_refs does); remove `children = ...`",
            "the parent_refs model keeps no `ancestors` field (only ancestors does); remove `ancestors = ...`",
            "the parent_refs model keeps no `path` field (only materialized_path does); remove `path = ...`",
            "the parent_refs model keeps no `left` field (only nested_set does); remove `left = ...`",
        ]
    );
    let input: DeriveInput = parse_quote! {
        #[tree(collection = "c", model = "child_refs", parent = "up")]
        struct Node {
            #[serde(rename = "_id")]
            id: u32,
        }
    };
    assert_eq!(
        errors(input),
        [
            "the child_refs model keeps no `parent` field (only parent_refs, ancestors and nested_set do); remove \
             `parent = ...`"
        ]
    );
}

#[test]
fn every_mistake_arrives_at_once() {
    let input: DeriveInput = parse_quote! {
        #[tree(collection = "", model = "adjacency", max_depth = 0, depth = 3, collection = 5)]
        #[tree(model = parent_refs, max_depth = "deep", parent = 1)]
        struct Node {
            #[tree(id)]
            id: u32,
            name: String,
        }
    };
    assert_eq!(
        errors(input),
        [
            "invalid MongoDB collection name \"\": it must not be empty",
            "unknown model \"adjacency\"; expected one of: \"parent_refs\", \"child_refs\", \"ancestors\", \
             \"materialized_path\", \"nested_set\"",
            "max_depth must be at least 1",
            "unknown key `depth` in #[tree(...)]; expected one of: `collection`, `model`, `max_depth`, `parent`, \
             `children`, `ancestors`, `path`, `left`, `right`, `validate`",
            "duplicate key `collection`",
            "collection must be a string, like `collection = \"...\"`",
            "duplicate key `model`",
            "model must be a string, like `model = \"...\"`",
            "duplicate key `max_depth`",
            "max_depth must be an integer, like `max_depth = 10`",
            "parent must be a string, like `parent = \"...\"`",
            "the #[tree(id)] field must be stored as `_id`: add #[serde(rename = \"_id\")]",
        ]
    );
}

#[test]
fn required_keys() {
    let input: DeriveInput = parse_quote! {
        struct Node {
            #[serde(rename = "_id")]
            id: u32,
        }
    };
    assert_eq!(
        errors(input),
        [
            "missing #[tree(collection = \"...\")]",
            "missing #[tree(model = \"...\")]: one of \"parent_refs\", \"child_refs\", \"ancestors\", \
             \"materialized_path\", \"nested_set\"",
        ]
    );
}

#[test]
fn not_a_struct_with_named_fields() {
    let on_enum: DeriveInput = parse_quote! {
        #[tree(collection = "c", model = "parent_refs")]
        enum Node { A, B }
    };
    assert_eq!(
        errors(on_enum),
        ["#[derive(Tree)] works on structs, not enums"]
    );
    let tuple: DeriveInput = parse_quote! {
        #[tree(collection = "c", model = "parent_refs")]
        struct Node(u32, String);
    };
    assert_eq!(
        errors(tuple),
        ["#[derive(Tree)] needs a struct with named fields: `struct Name { field: Type, ... }`"]
    );
    let generic: DeriveInput = parse_quote! {
        #[tree(collection = "c", model = "parent_refs")]
        struct Node<T> {
            #[serde(rename = "_id")]
            id: T,
        }
    };
    assert_eq!(
        errors(generic),
        ["#[derive(Tree)] does not support generic types"]
    );
}

#[test]
fn fallback_stubs_every_method() {
    let input: DeriveInput = parse_quote! {
        #[tree(collection = "c", model = "parent_refs", max_depth = 0)]
        struct Category {
            #[serde(rename = "_id")]
            name: String,
        }
    };
    assert_eq!(errors(input.clone()), ["max_depth must be at least 1"]);
    let code = fallback(&read(&input).0).to_string();
    let parts = [
        "impl :: pattern_core :: tree :: Tree for Category",
        "type Id = () ;",
        "impl Category",
        "# [doc (hidden)] # [allow (unused_variables)] pub async fn children < __PatternS > (store : & __PatternS , \
         id : & String ,) -> :: pattern_core :: Result < :: std :: vec :: Vec < Self > > where __PatternS : ? :: \
         core :: marker :: Sized , { :: core :: unreachable ! () }",
        "pub async fn insert_child < __PatternS > (& self , store : & __PatternS , parent : & String ,)",
        "new_parent : :: core :: option :: Option < & String > ,",
    ];
    crate::assert_contains(&code, &parts);
    for m in METHODS {
        assert!(
            code.contains(&format!("pub async fn {m} <")),
            "{m} not in {code}"
        );
    }
    assert!(
        !code.contains(":: pattern_core :: tree :: insert"),
        "a stub calls: {code}"
    );
    assert!(!code.contains("# [doc ="), "a stub is documented: {code}");
}

#[test]
fn fallback_stubs_take_the_marked_id_else_any() {
    let marked: DeriveInput = parse_quote! {
        #[tree(collection = "c")]
        struct Node {
            #[tree(id)]
            key: u64,
            #[serde(rename = "_id")]
            other: String,
        }
    };
    let (s, _) = read(&marked);
    assert_eq!(stub_id_ty(&s).unwrap().to_token_stream().to_string(), "u64");
    let none: DeriveInput = parse_quote! {
        #[tree(collection = "c", model = "ancestors")]
        struct Node {
            key: u64,
        }
    };
    let code = fallback(&read(&none).0).to_string();
    let parts = [
        "pub async fn get < __PatternS , __PatternQ > (store : & __PatternS , id : & __PatternQ ,)",
        "where __PatternS : ? :: core :: marker :: Sized , __PatternQ : ? :: core :: marker :: Sized ,",
        "new_parent : :: core :: option :: Option < & __PatternQ > ,",
        // No id, no `__PatternQ` to infer.
        "pub async fn ensure_indexes < __PatternS > (store",
        "pub async fn walk < __PatternS > (store",
    ];
    crate::assert_contains(&code, &parts);
    let on_enum: DeriveInput = parse_quote! {
        enum Node { A }
    };
    assert!(stub_id_ty(&read(&on_enum).0).is_none());
}

#[test]
fn fallback_of_a_generic_struct_holds_where_the_trait_bounds_do() {
    let input: DeriveInput = parse_quote! {
        #[tree(collection = "c", model = "parent_refs")]
        struct Node<T> {
            #[serde(rename = "_id")]
            id: String,
            data: T,
        }
    };
    let code = fallback(&read(&input).0).to_string();
    let bound = "where Node < T > : :: pattern_core :: __private :: serde :: Serialize + :: pattern_core :: \
                 __private :: serde :: de :: DeserializeOwned + :: core :: marker :: Send + :: core :: marker :: Sync";
    assert!(
        code.contains(&format!(
            "impl < T > :: pattern_core :: tree :: Tree for Node < T > {bound}"
        )),
        "{code}"
    );
    let input: DeriveInput = parse_quote! {
        struct Node {}
    };
    assert!(!fallback(&read(&input).0).to_string().contains("where Node"));
}

#[test]
fn id_types_from_the_id_field_and_validate() {
    let id_types = |ty: syn::Type, with: bool| {
        let input: DeriveInput = match with {
            false => parse_quote! {
                #[tree(collection = "c", model = "child_refs", validate)]
                struct Node {
                    #[serde(rename = "_id")]
                    id: #ty,
                }
            },
            true => parse_quote! {
                #[tree(collection = "c", model = "child_refs", validate)]
                struct Node {
                    #[serde(rename = "_id", with = "as_text")]
                    id: #ty,
                }
            },
        };
        let t = parse(&input).unwrap();
        assert!(t.attrs.validate.value().is_some());
        let code = expand(&t).to_string();
        assert!(code.contains("const VALIDATE : bool = true ;"), "{code}");
        let id = id_field(&t).unwrap();
        crate::bson_type::bson_types(id.ty, id.serde.as_is)
    };
    assert_eq!(id_types(parse_quote!(i64), false), ["Int", "Long"]);
    assert_eq!(
        id_types(parse_quote!(bson::oid::ObjectId), false),
        ["ObjectId"]
    );
    assert_eq!(id_types(parse_quote!(Name), false), [] as [&str; 0]);
    assert_eq!(id_types(parse_quote!(i64), true), [] as [&str; 0]);
}
