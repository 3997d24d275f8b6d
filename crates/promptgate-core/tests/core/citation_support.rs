//! The support check on page extracts as a fetch returns them: claims the page backs, claims it
//! backs only in part, and claims it does not make, in English, German, French, Russian and
//! Japanese, with numbers written the way each page writes them.

use promptgate_core::citations::passages::IndexedText;
use promptgate_core::citations::support::{SupportClass, check_claim};

const TIDES: &str = "Reading a tide table\n\
Heights in a tide table are measured from chart datum, roughly the lowest level the sea reaches in \
normal conditions. A height of 0.4 m therefore means the water stands 40 centimetres above that \
level. The table lists two high waters and two low waters for most days.\n\
Start a crossing on foot only after high water has turned, and be back well before the next low \
water turns. The causeway to the island floods about two hours after low water.\n\
The harbour office sells printed tables for 4.50 euros and publishes them online every December.";

const ELBPHILHARMONIE: &str = "Die Elbphilharmonie ist ein Konzerthaus in der HafenCity in Hamburg. \
Sie wurde nach Plänen des Architekturbüros Herzog & de Meuron errichtet und am 11. Januar 2017 \
eröffnet. Der Große Saal bietet 2.100 Plätze, der Kleine Saal 550. Die Baukosten stiegen von \
ursprünglich geplanten 77 Millionen Euro auf rund 866 Millionen Euro. \
Die Plaza in 37 Metern Höhe ist öffentlich zugänglich und bietet einen Rundblick über den Hafen.";

const FUJI: &str = "富士山は静岡県と山梨県にまたがる活火山である。標高は3776メートルで、日本の最高峰として知られる。\
最後の噴火は1707年の宝永大噴火で、江戸にも火山灰が降った。2013年に世界文化遺産に登録された。\
夏の登山シーズンは7月上旬から9月上旬までである。";

const LOIRE: &str = "La Loire est le plus long fleuve coulant entièrement en France, avec une \
longueur de 1 006 kilomètres. Elle prend sa source au mont Gerbier-de-Jonc, en Ardèche, et se jette \
dans l'océan Atlantique à Saint-Nazaire. Son débit moyen à l'embouchure est de 931 m³/s. \
Le Val de Loire entre Sully-sur-Loire et Chalonnes est inscrit au patrimoine mondial depuis 2000.";

const BAIKAL: &str = "Байкал — озеро тектонического происхождения в южной части Восточной Сибири. \
Это самое глубокое озеро на планете: его максимальная глубина составляет 1642 метра. \
В озере содержится около 19 % мировых запасов пресной воды. \
Зимой озеро покрывается льдом толщиной до полутора метров.";

fn class(claim: &str, page: &str) -> SupportClass {
    check_claim(claim, &IndexedText::new(page)).class
}

#[test]
fn a_claim_the_page_states_is_supported_and_the_passage_is_the_one_that_says_it() {
    let support = check_claim(
        "Tide table heights are measured from chart datum, roughly the lowest normal sea level",
        &IndexedText::new(TIDES),
    );
    assert_eq!(support.class, SupportClass::Supported, "{support:?}");
    let passage = support.passage.unwrap();
    assert!(passage.contains("measured from chart datum"), "{passage}");
    assert!(!passage.contains("4.50 euros"), "{passage}");
}

#[test]
fn a_claim_the_page_does_not_make_is_unsupported() {
    assert_eq!(
        class("The harbour office closes at dusk from April to October", TIDES),
        SupportClass::Unsupported
    );
    assert_eq!(
        class(
            "Spring tides are caused by the alignment of the sun and the moon",
            TIDES
        ),
        SupportClass::Unsupported
    );
}

#[test]
fn a_wrong_number_makes_an_otherwise_matching_claim_unsupported() {
    assert_eq!(
        class("The harbour office sells printed tables for 4.50 euros", TIDES),
        SupportClass::Supported
    );
    assert_eq!(
        class("The harbour office sells printed tables for 6.50 euros", TIDES),
        SupportClass::Unsupported,
        "the claim's number is nowhere near its words"
    );
}

#[test]
fn a_claim_sharing_only_some_words_with_the_page_is_weak() {
    assert_eq!(
        class(
            "The causeway floods two hours after low water, so walkers must carry flares",
            TIDES
        ),
        SupportClass::Weak
    );
}

#[test]
fn german_with_its_own_number_format() {
    // The page writes 2.100 (a thousands point); the answer writes 2100.
    assert_eq!(
        class(
            "Der Große Saal der Elbphilharmonie hat 2100 Plätze",
            ELBPHILHARMONIE
        ),
        SupportClass::Supported
    );
    assert_eq!(
        class(
            "Die Baukosten stiegen auf rund 866 Millionen Euro",
            ELBPHILHARMONIE
        ),
        SupportClass::Supported
    );
    assert_eq!(
        class("Die Elbphilharmonie wurde 2019 eröffnet", ELBPHILHARMONIE),
        SupportClass::Unsupported,
        "the year is wrong and little else matches"
    );
    assert_eq!(
        class(
            "Das Konzerthaus hat eine Tiefgarage mit 500 Stellplätzen",
            ELBPHILHARMONIE
        ),
        SupportClass::Unsupported
    );
}

#[test]
fn japanese_without_spaces_between_words() {
    let support = check_claim("富士山の標高は3776メートルである", &IndexedText::new(FUJI));
    assert_eq!(support.class, SupportClass::Supported, "{support:?}");
    assert!(support.passage.unwrap().contains("3776"));
    assert_eq!(
        class("富士山の最後の噴火は1707年である", FUJI),
        SupportClass::Supported
    );
    assert_eq!(
        class("富士山の標高は4000メートルである", FUJI),
        SupportClass::Unsupported,
        "the words match, the number does not"
    );
    assert_eq!(
        class("東京タワーは観光客に人気がある", FUJI),
        SupportClass::Unsupported
    );
}

#[test]
fn french_and_russian_words_match_across_inflection() {
    assert_eq!(
        class(
            "La Loire, plus long fleuve de France, se jette dans l'Atlantique à Saint-Nazaire",
            LOIRE
        ),
        SupportClass::Supported
    );
    assert_eq!(
        class("Le débit moyen de la Loire est de 931 m³/s", LOIRE),
        SupportClass::Supported
    );
    assert_eq!(
        class("Максимальная глубина Байкала составляет 1642 метра", BAIKAL),
        SupportClass::Supported
    );
    assert_eq!(
        class("Байкал содержит около 19 % мировых запасов пресной воды", BAIKAL),
        SupportClass::Supported
    );
    // Shares its subject with the page, and nothing else: never called supported.
    let saltiest = class("Байкал — самое солёное озеро Африки", BAIKAL);
    assert!(saltiest <= SupportClass::Weak, "{saltiest:?}");
}

#[test]
fn a_quotation_must_be_found_word_for_word() {
    assert_eq!(
        class(
            "The guide says to be back \"well before the next low water turns\"",
            TIDES
        ),
        SupportClass::Supported
    );
    let misquoted = class(
        "The guide says to be back \"shortly after the next low water turns\"",
        TIDES,
    );
    assert!(misquoted <= SupportClass::Weak, "{misquoted:?}");
}

#[test]
fn a_search_snippet_is_checked_as_a_one_passage_text() {
    let snippet =
        "The harbour office opens at eight in the morning and closes at dusk from April to October.";
    assert_eq!(
        class("The harbour office closes at dusk in summer", snippet),
        SupportClass::Supported
    );
    assert_eq!(
        class("Parking is free on Sundays", snippet),
        SupportClass::Unsupported
    );
    assert_eq!(class("Anything at all", ""), SupportClass::Unsupported);
}

#[test]
fn the_check_is_deterministic() {
    let claim = "Die Plaza liegt in 37 Metern Höhe und ist öffentlich zugänglich";
    let first = check_claim(claim, &IndexedText::new(ELBPHILHARMONIE));
    for _ in 0..5 {
        assert_eq!(check_claim(claim, &IndexedText::new(ELBPHILHARMONIE)), first);
    }
}
