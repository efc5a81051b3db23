-- Full-text search finds the words SQLite's finds.  PostgreSQL's parser keeps e-mail addresses, URLs, host
-- names, paths and dotted words whole ("maya.silva@example.com" is one token: "example" missed it) and the
-- english configuration keeps accents ("cafe" missed "caf\u00E9"), where FTS5's unicode61 splits at every
-- separator and drops diacritics.  chronomem_fts_text() turns text into what unicode61 would tokenize it to,
-- in plain SQL: no extension (managed servers refuse CREATE EXTENSION unaccent to ordinary roles), no C.
--
-- 1. Latin letters are folded as unicode61 (remove_diacritics=1) folds them: to the base letter where the
--    letter is one letter and one diacritic (U+00C9 E acute -> e, U+0219 s comma below -> s), else to its
--    lower case (U+00D8 O stroke -> U+00F8, U+00C6 AE -> U+00E6, U+1E9E capital sharp s -> U+00DF, and
--    U+1EA4 A circumflex acute -> U+1EA5: two diacritics are kept, as FTS5 keeps them); the combining
--    diacritics unicode61 drops are dropped ("cafe" + U+0301 is "cafe").  The lower case is given here, not
--    left to the parser: a database of the C locale lowers ASCII only.  The table (Latin-1 Supplement, Latin
--    Extended-A and -B, Latin Extended Additional) was read off FTS5 code point by code point.
--    translate() looks a character up from the start of its table: the commonest ASCII characters open it,
--    mapped to themselves, so a letter of an English word costs a few comparisons (the table alone cost
--    185 us a fact, 18 s for 100,000), and a text with no character of the table skips it.
-- 2. Every run of the characters unicode61 treats as separators becomes one space, so the parser sees only
--    words and numbers: "python3.11" is python3 and 11, "night_owl42" night and owl42.  The class is FTS5's
--    own, read off it for every code point (its Unicode 6.1 tables: emoji of later versions are word
--    characters to it, and so here).
-- Both run under the "C" collation: the regular expressions then mean the same in every database locale.
-- PL/pgSQL, not SQL: a generated column evaluates the function once per inserted row, and a SQL function
-- is planned again at every statement (150 us a row by executemany, against 35 us; 11 us without it).
-- tests/test_fulltext_parity.py checks both against FTS5, code point by code point.
--
-- This file is ASCII and the characters are escapes, decoded only in a UTF8 database: a database of another
-- encoding (SQL_ASCII, LATIN1) could not hold them, and its function splits at ASCII separators alone.
DO $do$
BEGIN
  IF getdatabaseencoding() = 'UTF8' THEN
    CREATE OR REPLACE FUNCTION chronomem_fts_text(t text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
    BEGIN RETURN regexp_replace(
      (CASE WHEN (t COLLATE "C") ~ E'[\\u00B5\\u00C0-\\u024F\\u0300-\\u036F\\u1E00-\\u1EFF]'
            THEN translate(t,
              E' etaoinsrhldcumfpgwybvkxjqzETAOINSRHLDCUMFPGWYBVKXJQZ0123456789.,:/@-'
              '\u00B5\u00C0\u00C1\u00C2\u00C3\u00C4\u00C5\u00C6\u00C7\u00C8\u00C9\u00CA\u00CB\u00CC\u00CD\u00CE'
              '\u00CF\u00D0\u00D1\u00D2\u00D3\u00D4\u00D5\u00D6\u00D8\u00D9\u00DA\u00DB\u00DC\u00DD\u00DE\u00E0'
              '\u00E1\u00E2\u00E3\u00E4\u00E5\u00E7\u00E8\u00E9\u00EA\u00EB\u00EC\u00ED\u00EE\u00EF\u00F1\u00F2'
              '\u00F3\u00F4\u00F5\u00F6\u00F9\u00FA\u00FB\u00FC\u00FD\u00FF\u0100\u0101\u0102\u0103\u0104\u0105'
              '\u0106\u0107\u0108\u0109\u010A\u010B\u010C\u010D\u010E\u010F\u0110\u0112\u0113\u0114\u0115\u0116'
              '\u0117\u0118\u0119\u011A\u011B\u011C\u011D\u011E\u011F\u0120\u0121\u0122\u0123\u0124\u0125\u0126'
              '\u0128\u0129\u012A\u012B\u012C\u012D\u012E\u012F\u0130\u0132\u0134\u0135\u0136\u0137\u0139\u013A'
              '\u013B\u013C\u013D\u013E\u013F\u0141\u0143\u0144\u0145\u0146\u0147\u0148\u014A\u014C\u014D\u014E'
              '\u014F\u0150\u0151\u0152\u0154\u0155\u0156\u0157\u0158\u0159\u015A\u015B\u015C\u015D\u015E\u015F'
              '\u0160\u0161\u0162\u0163\u0164\u0165\u0166\u0168\u0169\u016A\u016B\u016C\u016D\u016E\u016F\u0170'
              '\u0171\u0172\u0173\u0174\u0175\u0176\u0177\u0178\u0179\u017A\u017B\u017C\u017D\u017E\u017F\u0181'
              '\u0182\u0184\u0186\u0187\u0189\u018A\u018B\u018E\u018F\u0190\u0191\u0193\u0194\u0196\u0197\u0198'
              '\u019C\u019D\u019F\u01A0\u01A1\u01A2\u01A4\u01A6\u01A7\u01A9\u01AC\u01AE\u01AF\u01B0\u01B1\u01B2'
              '\u01B3\u01B5\u01B7\u01B8\u01BC\u01C4\u01C5\u01C7\u01C8\u01CA\u01CB\u01CD\u01CE\u01CF\u01D0\u01D1'
              '\u01D2\u01D3\u01D4\u01D5\u01D7\u01D9\u01DB\u01DE\u01E0\u01E2\u01E4\u01E6\u01E7\u01E8\u01E9\u01EA'
              '\u01EB\u01EC\u01EE\u01F0\u01F1\u01F2\u01F4\u01F5\u01F6\u01F7\u01F8\u01F9\u01FA\u01FC\u01FE\u0200'
              '\u0201\u0202\u0203\u0204\u0205\u0206\u0207\u0208\u0209\u020A\u020B\u020C\u020D\u020E\u020F\u0210'
              '\u0211\u0212\u0213\u0214\u0215\u0216\u0217\u0218\u0219\u021A\u021B\u021C\u021E\u021F\u0220\u0222'
              '\u0224\u0226\u0227\u0228\u0229\u022A\u022C\u022E\u022F\u0230\u0232\u0233\u023A\u023B\u023D\u023E'
              '\u0241\u0243\u0244\u0245\u0246\u0248\u024A\u024C\u024E\u1E00\u1E01\u1E02\u1E03\u1E04\u1E05\u1E06'
              '\u1E07\u1E08\u1E0A\u1E0B\u1E0C\u1E0D\u1E0E\u1E0F\u1E10\u1E11\u1E12\u1E13\u1E14\u1E16\u1E18\u1E19'
              '\u1E1A\u1E1B\u1E1C\u1E1E\u1E1F\u1E20\u1E21\u1E22\u1E23\u1E24\u1E25\u1E26\u1E27\u1E28\u1E29\u1E2A'
              '\u1E2B\u1E2C\u1E2D\u1E2E\u1E30\u1E31\u1E32\u1E33\u1E34\u1E35\u1E36\u1E37\u1E38\u1E3A\u1E3B\u1E3C'
              '\u1E3D\u1E3E\u1E3F\u1E40\u1E41\u1E42\u1E43\u1E44\u1E45\u1E46\u1E47\u1E48\u1E49\u1E4A\u1E4B\u1E4C'
              '\u1E4E\u1E50\u1E52\u1E54\u1E55\u1E56\u1E57\u1E58\u1E59\u1E5A\u1E5B\u1E5C\u1E5E\u1E5F\u1E60\u1E61'
              '\u1E62\u1E63\u1E64\u1E66\u1E68\u1E6A\u1E6B\u1E6C\u1E6D\u1E6E\u1E6F\u1E70\u1E71\u1E72\u1E73\u1E74'
              '\u1E75\u1E76\u1E77\u1E78\u1E7A\u1E7C\u1E7D\u1E7E\u1E7F\u1E80\u1E81\u1E82\u1E83\u1E84\u1E85\u1E86'
              '\u1E87\u1E88\u1E89\u1E8A\u1E8B\u1E8C\u1E8D\u1E8E\u1E8F\u1E90\u1E91\u1E92\u1E93\u1E94\u1E95\u1E96'
              '\u1E97\u1E98\u1E99\u1E9B\u1E9E\u1EA0\u1EA1\u1EA2\u1EA3\u1EA4\u1EA6\u1EA8\u1EAA\u1EAC\u1EAE\u1EB0'
              '\u1EB2\u1EB4\u1EB6\u1EB8\u1EB9\u1EBA\u1EBB\u1EBC\u1EBD\u1EBE\u1EC0\u1EC2\u1EC4\u1EC6\u1EC8\u1EC9'
              '\u1ECA\u1ECB\u1ECC\u1ECD\u1ECE\u1ECF\u1ED0\u1ED2\u1ED4\u1ED6\u1ED8\u1EDA\u1EDC\u1EDE\u1EE0\u1EE2'
              '\u1EE4\u1EE5\u1EE6\u1EE7\u1EE8\u1EEA\u1EEC\u1EEE\u1EF0\u1EF2\u1EF3\u1EF4\u1EF5\u1EF6\u1EF7\u1EF8'
              '\u1EF9\u1EFA\u1EFC\u1EFE'
              || E'\u0300\u0301\u0302\u0303\u0304\u0306\u0307\u0308\u0309\u030A\u030B\u030C\u030F\u0311\u031B\u0323'
                 '\u0324\u0325\u0326\u0327\u0328\u032D\u032E\u0330\u0331',
              E' etaoinsrhldcumfpgwybvkxjqzETAOINSRHLDCUMFPGWYBVKXJQZ0123456789.,:/@-'
              '\u03BCaaaaaa\u00E6ceeeeiii'
              'i\u00F0nooooo\u00F8uuuuy\u00FEa'
              'aaaaaceeeeiiiino'
              'oooouuuuyyaaaaaa'
              'ccccccccdd\u0111eeeee'
              'eeeeegggggggghh\u0127'
              'iiiiiiiii\u0133jjkkll'
              'llll\u0140\u0142nnnnnn\u014Booo'
              'ooo\u0153rrrrrrssssss'
              'sstttt\u0167uuuuuuuuu'
              'uuuwwyyyzzzzzzs\u0253'
              '\u0183\u0185\u0254\u0188\u0256\u0257\u018C\u01DD\u0259\u025B\u0192\u0260\u0263\u0269\u0268\u0199'
              '\u026F\u0272\u0275oo\u01A3\u01A5\u0280\u01A8\u0283\u01AD\u0288uu\u028A\u028B'
              '\u01B4\u01B6\u0292\u01B9\u01BD\u01C6\u01C6\u01C9\u01C9\u01CC\u01CCaaiio'
              'ouu\u01D6\u01D8\u01DA\u01DC\u01DF\u01E1\u01E3\u01E5ggkko'
              'o\u01ED\u01EFj\u01F3\u01F3gg\u0195\u01BFnn\u01FB\u01FD\u01FFa'
              'aaaeeeeiiiioooor'
              'rrruuuusstt\u021Dhh\u019E\u0223'
              '\u0225aaee\u022B\u022Doo\u0231yy\u2C65\u023C\u019A\u2C66'
              '\u0242\u0180\u0289\u028C\u0247\u0249\u024B\u024D\u024Faabbbbb'
              'b\u1E09dddddddddd\u1E15\u1E17ee'
              'ee\u1E1Dffgghhhhhhhhh'
              'hii\u1E2Fkkkkkkll\u1E39lll'
              'lmmmmmmnnnnnnnn\u1E4D'
              '\u1E4F\u1E51\u1E53pppprrrr\u1E5Drrss'
              'ss\u1E65\u1E67\u1E69ttttttttuuu'
              'uuu\u1E79\u1E7Bvvvvwwwwwww'
              'wwwxxxxyyzzzzzzh'
              'twys\u00DFaaaa\u1EA5\u1EA7\u1EA9\u1EAB\u1EAD\u1EAF\u1EB1'
              '\u1EB3\u1EB5\u1EB7eeeeee\u1EBF\u1EC1\u1EC3\u1EC5\u1EC7ii'
              'iioooo\u1ED1\u1ED3\u1ED5\u1ED7\u1ED9\u1EDB\u1EDD\u1EDF\u1EE1\u1EE3'
              'uuuu\u1EE9\u1EEB\u1EED\u1EEF\u1EF1yyyyyyy'
              'y\u1EFB\u1EFD\u1EFF')
            ELSE t END) COLLATE "C",
      E'['
      '\\u0001-\\u002F\\u003A-\\u0040\\u005B-\\u0060\\u007B-\\u00A9\\u00AB-\\u00B1\\u00B4\\u00B6-\\u00B8\\u00BB\\u00BF'
      '\\u00D7\\u00F7\\u02C2-\\u02C5\\u02D2-\\u02DF\\u02E5-\\u02EB\\u02ED\\u02EF-\\u02FF\\u0305\\u030D-\\u030E\\u0310'
      '\\u0312-\\u031A\\u031C-\\u0322\\u0329-\\u032C\\u032F\\u0332-\\u036F\\u0375\\u037E\\u0384-\\u0385\\u0387\\u03F6'
      '\\u0482-\\u0489\\u055A-\\u055F\\u0589-\\u058A\\u058F\\u0591-\\u05C7\\u05F3-\\u05F4\\u0600-\\u0604\\u0606-\\u061B'
      '\\u061E-\\u061F\\u064B-\\u065F\\u066A-\\u066D\\u0670\\u06D4\\u06D6-\\u06E4\\u06E7-\\u06ED\\u06FD-\\u06FE'
      '\\u0700-\\u070D\\u070F\\u0711\\u0730-\\u074A\\u07A6-\\u07B0\\u07EB-\\u07F3\\u07F6-\\u07F9\\u0816-\\u0819'
      '\\u081B-\\u0823\\u0825-\\u0827\\u0829-\\u082D\\u0830-\\u083E\\u0859-\\u085B\\u085E\\u08E4-\\u08FE\\u0900-\\u0903'
      '\\u093A-\\u093C\\u093E-\\u094F\\u0951-\\u0957\\u0962-\\u0965\\u0970\\u0981-\\u0983\\u09BC\\u09BE-\\u09C4'
      '\\u09C7-\\u09C8\\u09CB-\\u09CD\\u09D7\\u09E2-\\u09E3\\u09F2-\\u09F3\\u09FA-\\u09FB\\u0A01-\\u0A03\\u0A3C'
      '\\u0A3E-\\u0A42\\u0A47-\\u0A48\\u0A4B-\\u0A4D\\u0A51\\u0A70-\\u0A71\\u0A75\\u0A81-\\u0A83\\u0ABC\\u0ABE-\\u0AC5'
      '\\u0AC7-\\u0AC9\\u0ACB-\\u0ACD\\u0AE2-\\u0AE3\\u0AF0-\\u0AF1\\u0B01-\\u0B03\\u0B3C\\u0B3E-\\u0B44\\u0B47-\\u0B48'
      '\\u0B4B-\\u0B4D\\u0B56-\\u0B57\\u0B62-\\u0B63\\u0B70\\u0B82\\u0BBE-\\u0BC2\\u0BC6-\\u0BC8\\u0BCA-\\u0BCD\\u0BD7'
      '\\u0BF3-\\u0BFA\\u0C01-\\u0C03\\u0C3E-\\u0C44\\u0C46-\\u0C48\\u0C4A-\\u0C4D\\u0C55-\\u0C56\\u0C62-\\u0C63\\u0C7F'
      '\\u0C82-\\u0C83\\u0CBC\\u0CBE-\\u0CC4\\u0CC6-\\u0CC8\\u0CCA-\\u0CCD\\u0CD5-\\u0CD6\\u0CE2-\\u0CE3\\u0D02-\\u0D03'
      '\\u0D3E-\\u0D44\\u0D46-\\u0D48\\u0D4A-\\u0D4D\\u0D57\\u0D62-\\u0D63\\u0D79\\u0D82-\\u0D83\\u0DCA\\u0DCF-\\u0DD4'
      '\\u0DD6\\u0DD8-\\u0DDF\\u0DF2-\\u0DF4\\u0E31\\u0E34-\\u0E3A\\u0E3F\\u0E47-\\u0E4F\\u0E5A-\\u0E5B\\u0EB1'
      '\\u0EB4-\\u0EB9\\u0EBB-\\u0EBC\\u0EC8-\\u0ECD\\u0F01-\\u0F1F\\u0F34-\\u0F3F\\u0F71-\\u0F87\\u0F8D-\\u0F97'
      '\\u0F99-\\u0FBC\\u0FBE-\\u0FCC\\u0FCE-\\u0FDA\\u102B-\\u103E\\u104A-\\u104F\\u1056-\\u1059\\u105E-\\u1060'
      '\\u1062-\\u1064\\u1067-\\u106D\\u1071-\\u1074\\u1082-\\u108D\\u108F\\u109A-\\u109F\\u10FB\\u135D-\\u1368'
      '\\u1390-\\u1399\\u1400\\u166D-\\u166E\\u1680\\u169B-\\u169C\\u16EB-\\u16ED\\u1712-\\u1714\\u1732-\\u1736'
      '\\u1752-\\u1753\\u1772-\\u1773\\u17B4-\\u17D6\\u17D8-\\u17DB\\u17DD\\u1800-\\u180E\\u18A9\\u1920-\\u192B'
      '\\u1930-\\u193B\\u1940\\u1944-\\u1945\\u19B0-\\u19C0\\u19C8-\\u19C9\\u19DE-\\u19FF\\u1A17-\\u1A1B\\u1A1E-\\u1A1F'
      '\\u1A55-\\u1A5E\\u1A60-\\u1A7C\\u1A7F\\u1AA0-\\u1AA6\\u1AA8-\\u1AAD\\u1B00-\\u1B04\\u1B34-\\u1B44\\u1B5A-\\u1B7C'
      '\\u1B80-\\u1B82\\u1BA1-\\u1BAD\\u1BE6-\\u1BF3\\u1BFC-\\u1BFF\\u1C24-\\u1C37\\u1C3B-\\u1C3F\\u1C7E-\\u1C7F'
      '\\u1CC0-\\u1CC7\\u1CD0-\\u1CE8\\u1CED\\u1CF2-\\u1CF4\\u1DC0-\\u1DE6\\u1DFC-\\u1DFF\\u1FBD\\u1FBF-\\u1FC1'
      '\\u1FCD-\\u1FCF\\u1FDD-\\u1FDF\\u1FED-\\u1FEF\\u1FFD-\\u1FFE\\u2000-\\u2064\\u206A-\\u206F\\u207A-\\u207E'
      '\\u208A-\\u208E\\u20A0-\\u20B9\\u20D0-\\u20F0\\u2100-\\u2101\\u2103-\\u2106\\u2108-\\u2109\\u2114\\u2116-\\u2118'
      '\\u211E-\\u2123\\u2125\\u2127\\u2129\\u212E\\u213A-\\u213B\\u2140-\\u2144\\u214A-\\u214D\\u214F\\u2190-\\u23F3'
      '\\u2400-\\u2426\\u2440-\\u244A\\u249C-\\u24E9\\u2500-\\u26FF\\u2701-\\u2775\\u2794-\\u2B4C\\u2B50-\\u2B59'
      '\\u2CE5-\\u2CEA\\u2CEF-\\u2CF1\\u2CF9-\\u2CFC\\u2CFE-\\u2CFF\\u2D70\\u2D7F\\u2DE0-\\u2E2E\\u2E30-\\u2E3B'
      '\\u2E80-\\u2E99\\u2E9B-\\u2EF3\\u2F00-\\u2FD5\\u2FF0-\\u2FFB\\u3000-\\u3004\\u3008-\\u3020\\u302A-\\u3030'
      '\\u3036-\\u3037\\u303D-\\u303F\\u3099-\\u309C\\u30A0\\u30FB\\u3190-\\u3191\\u3196-\\u319F\\u31C0-\\u31E3'
      '\\u3200-\\u321E\\u322A-\\u3247\\u3250\\u3260-\\u327F\\u328A-\\u32B0\\u32C0-\\u32FE\\u3300-\\u33FF\\u4DC0-\\u4DFF'
      '\\uA490-\\uA4C6\\uA4FE-\\uA4FF\\uA60D-\\uA60F\\uA66F-\\uA67E\\uA69F\\uA6F0-\\uA6F7\\uA700-\\uA716\\uA720-\\uA721'
      '\\uA789-\\uA78A\\uA802\\uA806\\uA80B\\uA823-\\uA82B\\uA836-\\uA839\\uA874-\\uA877\\uA880-\\uA881\\uA8B4-\\uA8C4'
      '\\uA8CE-\\uA8CF\\uA8E0-\\uA8F1\\uA8F8-\\uA8FA\\uA926-\\uA92F\\uA947-\\uA953\\uA95F\\uA980-\\uA983\\uA9B3-\\uA9CD'
      '\\uA9DE-\\uA9DF\\uAA29-\\uAA36\\uAA43\\uAA4C-\\uAA4D\\uAA5C-\\uAA5F\\uAA77-\\uAA79\\uAA7B\\uAAB0\\uAAB2-\\uAAB4'
      '\\uAAB7-\\uAAB8\\uAABE-\\uAABF\\uAAC1\\uAADE-\\uAADF\\uAAEB-\\uAAF1\\uAAF5-\\uAAF6\\uABE3-\\uABED\\uFB1E\\uFB29'
      '\\uFBB2-\\uFBC1\\uFD3E-\\uFD3F\\uFDFC-\\uFDFD\\uFE00-\\uFE19\\uFE20-\\uFE26\\uFE30-\\uFE52\\uFE54-\\uFE66'
      '\\uFE68-\\uFE6B\\uFEFF\\uFF01-\\uFF0F\\uFF1A-\\uFF20\\uFF3B-\\uFF40\\uFF5B-\\uFF65\\uFFE0-\\uFFE6\\uFFE8-\\uFFEE'
      '\\uFFF9-\\uFFFF\\U00010100-\\U00010102\\U00010137-\\U0001013F\\U00010179-\\U00010189\\U00010190-\\U0001019B'
      '\\U000101D0-\\U000101FD\\U0001039F\\U000103D0\\U00010857\\U0001091F\\U0001093F\\U00010A01-\\U00010A03'
      '\\U00010A05-\\U00010A06\\U00010A0C-\\U00010A0F\\U00010A38-\\U00010A3A\\U00010A3F\\U00010A50-\\U00010A58'
      '\\U00010A7F\\U00010B39-\\U00010B3F\\U00011000-\\U00011002\\U00011038-\\U0001104D\\U00011080-\\U00011082'
      '\\U000110B0-\\U000110C1\\U00011100-\\U00011102\\U00011127-\\U00011134\\U00011140-\\U00011143'
      '\\U00011180-\\U00011182\\U000111B3-\\U000111C0\\U000111C5-\\U000111C8\\U000116AB-\\U000116B7'
      '\\U00012470-\\U00012473\\U00016F51-\\U00016F7E\\U00016F8F-\\U00016F92\\U0001D000-\\U0001D0F5'
      '\\U0001D100-\\U0001D126\\U0001D129-\\U0001D1DD\\U0001D200-\\U0001D245\\U0001D300-\\U0001D356\\U0001D6C1'
      '\\U0001D6DB\\U0001D6FB\\U0001D715\\U0001D735\\U0001D74F\\U0001D76F\\U0001D789\\U0001D7A9\\U0001D7C3'
      '\\U0001EEF0-\\U0001EEF1\\U0001F000-\\U0001F02B\\U0001F030-\\U0001F093\\U0001F0A0-\\U0001F0AE'
      '\\U0001F0B1-\\U0001F0BE\\U0001F0C1-\\U0001F0CF\\U0001F0D1-\\U0001F0DF\\U0001F110-\\U0001F12E'
      '\\U0001F130-\\U0001F16B\\U0001F170-\\U0001F19A\\U0001F1E6-\\U0001F202\\U0001F210-\\U0001F23A'
      '\\U0001F240-\\U0001F248\\U0001F250-\\U0001F251\\U0001F300-\\U0001F320\\U0001F330-\\U0001F335'
      '\\U0001F337-\\U0001F37C\\U0001F380-\\U0001F393\\U0001F3A0-\\U0001F3C4\\U0001F3C6-\\U0001F3CA'
      '\\U0001F3E0-\\U0001F3F0\\U0001F400-\\U0001F43E\\U0001F440\\U0001F442-\\U0001F4F7\\U0001F4F9-\\U0001F4FC'
      '\\U0001F500-\\U0001F53D\\U0001F540-\\U0001F543\\U0001F550-\\U0001F567\\U0001F5FB-\\U0001F640'
      '\\U0001F645-\\U0001F64F\\U0001F680-\\U0001F6C5\\U0001F700-\\U0001F773\\U000E0001\\U000E0020-\\U000E007F'
      '\\U000E0100-\\U000E01EF'
      ']+', ' ', 'g');
    END
    $fn$;
  ELSE
    CREATE OR REPLACE FUNCTION chronomem_fts_text(t text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
    BEGIN RETURN regexp_replace(t COLLATE "C", E'[\\x01-\\x2F\\x3A-\\x40\\x5B-\\x60\\x7B-\\x7F]+', ' ', 'g'); END
    $fn$;
  END IF;
END
$do$;

-- The query side: each query word (chronomem.store.fulltext.query_words) folded the same way and read as
-- plain text, never as tsquery syntax (phraseto_tsquery: a word that folds to several, "night_owl42", is
-- the phrase of them, as in FTS5), the words OR-ed together in their order.
CREATE OR REPLACE AGGREGATE chronomem_tsquery_or(tsquery) (SFUNC = tsquery_or, STYPE = tsquery);
CREATE OR REPLACE FUNCTION chronomem_fts_query(words text[]) RETURNS tsquery
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
BEGIN
  RETURN (SELECT chronomem_tsquery_or(phraseto_tsquery('english'::regconfig, chronomem_fts_text(w)) ORDER BY i)
          FROM unnest(words) WITH ORDINALITY AS u(w, i));
END
$fn$;

-- The columns again over the folded text: a one-time rewrite of both tables and their GIN indexes, under
-- an exclusive lock (3.5 s for 100,000 facts, 4.5 s for 100,000 turns, where the same rewrite over the raw
-- text takes 2.1 s and 2.4 s).  The turn's own words keep weight A and its predecessor's B (0004); the
-- relation's "_" needs no replace() any more.
DROP INDEX facts_fts;
ALTER TABLE facts DROP COLUMN tsv;
ALTER TABLE facts ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig,
  chronomem_fts_text(subject || ' ' || relation || ' ' || object || ' ' || text))) STORED;
CREATE INDEX facts_fts ON facts USING gin (tsv);

DROP INDEX messages_fts;
ALTER TABLE messages DROP COLUMN tsv;
ALTER TABLE messages ADD COLUMN tsv tsvector GENERATED ALWAYS AS
  (setweight(to_tsvector('english'::regconfig, chronomem_fts_text(speaker || ' ' || text)), 'A')
   || setweight(to_tsvector('english'::regconfig, chronomem_fts_text(context)), 'B')) STORED;
CREATE INDEX messages_fts ON messages USING gin (tsv);
