-- SPDX-License-Identifier: Apache-2.0
-- safetensors and .npz: ar_from_safetensors, ar_to_safetensors,
-- ar_safetensors_metadata, ar_from_npz, ar_to_npz. Files written by NumPy and
-- by a spec-following safetensors writer are checked in tests/python.

-- safetensors written from a record: compact header padded to 8 bytes, data in key order.
SELECT CAST(substr(ar_to_safetensors(r), 9, 120) AS TEXT), length(ar_to_safetensors(r)) FROM (SELECT ar('w', npy_from_json('[[1,2],[3,4]]', 'float32'), 'b', npy_from_json('[1]', 'int8')) r);
SELECT hex(substr(ar_to_safetensors(ar('w', npy_from_json('[1.5, -2]', 'float32'))), -8));
SELECT CAST(substr(ar_to_safetensors(x'', '{"format": "pt", "caf\u00e9": "x"}'), 9) AS TEXT);
SELECT CAST(substr(ar_to_safetensors(x'', NULL), 9) AS TEXT), ar_to_safetensors(NULL);

-- Round trips through safetensors keep every record of NumPy dtypes byte for byte.
SELECT f, hex(ar_from_safetensors(ar_to_safetensors(readfile('tests/data/records/' || f)))) = hex(readfile('tests/data/records/' || f)) FROM (SELECT 'empty.pb' f UNION ALL SELECT 'list_3.pb' UNION ALL SELECT 'mlp_dict.pb' UNION ALL SELECT 'unicode_keys.pb');
-- legacy raw items come back as numpy.ndarray items
SELECT ar_json(ar_from_safetensors(ar_to_safetensors(readfile('tests/data/records/legacy_raw.pb'))));

-- Reading: tensors in data-offset order; BF16 / F8 become raw items with stype 'safetensors'.
SELECT ar_json(ar_from_safetensors(x'8c000000000000007b227a223a7b226474797065223a22463136222c227368617065223a5b325d2c22646174615f6f666673657473223a5b362c31305d7d2c2268223a7b226474797065223a2242463136222c227368617065223a5b335d2c22646174615f6f666673657473223a5b302c365d7d2c225f5f6d657461646174615f5f223a7b22666f726d6174223a227074227d7d803f00404040003c00c0'));
SELECT npy_to_json(ar_get(ar_from_safetensors(x'8c000000000000007b227a223a7b226474797065223a22463136222c227368617065223a5b325d2c22646174615f6f666673657473223a5b362c31305d7d2c2268223a7b226474797065223a2242463136222c227368617065223a5b335d2c22646174615f6f666673657473223a5b302c365d7d2c225f5f6d657461646174615f5f223a7b22666f726d6174223a227074227d7d803f00404040003c00c0'), 'z')), hex(ar_data(ar_from_safetensors(x'8c000000000000007b227a223a7b226474797065223a22463136222c227368617065223a5b325d2c22646174615f6f666673657473223a5b362c31305d7d2c2268223a7b226474797065223a2242463136222c227368617065223a5b335d2c22646174615f6f666673657473223a5b302c365d7d2c225f5f6d657461646174615f5f223a7b22666f726d6174223a227074227d7d803f00404040003c00c0'), 'h'));
SELECT ar_get(ar_from_safetensors(x'8c000000000000007b227a223a7b226474797065223a22463136222c227368617065223a5b325d2c22646174615f6f666673657473223a5b362c31305d7d2c2268223a7b226474797065223a2242463136222c227368617065223a5b335d2c22646174615f6f666673657473223a5b302c365d7d2c225f5f6d657461646174615f5f223a7b22666f726d6174223a227074227d7d803f00404040003c00c0'), 'h');
SELECT hex(ar_to_safetensors(ar_from_safetensors(x'8c000000000000007b227a223a7b226474797065223a22463136222c227368617065223a5b325d2c22646174615f6f666673657473223a5b362c31305d7d2c2268223a7b226474797065223a2242463136222c227368617065223a5b335d2c22646174615f6f666673657473223a5b302c365d7d2c225f5f6d657461646174615f5f223a7b22666f726d6174223a227074227d7d803f00404040003c00c0'), ar_safetensors_metadata(x'8c000000000000007b227a223a7b226474797065223a22463136222c227368617065223a5b325d2c22646174615f6f666673657473223a5b362c31305d7d2c2268223a7b226474797065223a2242463136222c227368617065223a5b335d2c22646174615f6f666673657473223a5b302c365d7d2c225f5f6d657461646174615f5f223a7b22666f726d6174223a227074227d7d803f00404040003c00c0'))) = hex(x'90000000000000007b225f5f6d657461646174615f5f223a7b22666f726d6174223a227074227d2c2268223a7b226474797065223a2242463136222c227368617065223a5b335d2c22646174615f6f666673657473223a5b302c365d7d2c227a223a7b226474797065223a22463136222c227368617065223a5b325d2c22646174615f6f666673657473223a5b362c31305d7d7d20202020803f00404040003c00c0');
SELECT ar_safetensors_metadata(x'8c000000000000007b227a223a7b226474797065223a22463136222c227368617065223a5b325d2c22646174615f6f666673657473223a5b362c31305d7d2c2268223a7b226474797065223a2242463136222c227368617065223a5b335d2c22646174615f6f666673657473223a5b302c365d7d2c225f5f6d657461646174615f5f223a7b22666f726d6174223a227074227d7d803f00404040003c00c0'), ar_safetensors_metadata(x'02000000000000007b7d'), ar_safetensors_metadata(NULL);
SELECT npy_to_json(ar_get(r, 'c')), npy_to_json(ar_get(r, 't')) FROM (SELECT ar_from_safetensors(x'6b000000000000007b2263223a7b226474797065223a22433634222c227368617065223a5b315d2c22646174615f6f666673657473223a5b302c385d7d2c2274223a7b226474797065223a22424f4f4c222c227368617065223a5b5d2c22646174615f6f666673657473223a5b382c395d7d7d0000803f000000c001') r);

-- Malformed safetensors files.
SELECT ar_from_safetensors(x'0100');
SELECT ar_from_safetensors(x'01e1f50500000000');
SELECT ar_from_safetensors(x'10000000000000007b7d');
SELECT ar_from_safetensors(x'02000000000000007b7d7878');
SELECT ar_from_safetensors(x'6b000000000000007b2261223a7b226474797065223a22463332222c227368617065223a5b325d2c22646174615f6f666673657473223a5b302c385d7d2c2262223a7b226474797065223a22463332222c227368617065223a5b315d2c22646174615f6f666673657473223a5b342c385d7d7d0000000000000000');
SELECT ar_from_safetensors(x'36000000000000007b2261223a7b226474797065223a22463332222c227368617065223a5b335d2c22646174615f6f666673657473223a5b302c385d7d7d0000000000000000');
SELECT ar_from_safetensors(x'35000000000000007b2261223a7b226474797065223a22463332222c227368617065223a5b325d2c22646174615f6f666673657473223a5b302c385d7d0000000000000000');
SELECT ar_from_safetensors(x'3f000000000000007b2261223a7b226474797065223a22463332222c227368617065223a5b323134373438333634385d2c22646174615f6f666673657473223a5b302c305d7d7d');
SELECT ar_from_safetensors(x'42000000000000007b2261223a7b226474797065223a22463332222c227368617065223a5b323134373438333634382c20305d2c22646174615f6f666673657473223a5b302c305d7d7d');
SELECT ar_from_safetensors('text');

-- Records safetensors cannot hold.
SELECT ar_to_safetensors(ar('z', npy_from_json('[[1,2]]', 'complex128')));
SELECT ar_to_safetensors(ar('__metadata__', npy_from_json('[1]')));
SELECT ar_to_safetensors(x'', '{"n": 1}');
SELECT ar_to_safetensors(x'', '[]');
SELECT ar_to_safetensors(x'', 5);

-- .npz: written as np.savez / np.savez_compressed write it, read back.
SELECT f, c, hex(ar_from_npz(ar_to_npz(readfile('tests/data/records/' || f), c))) = hex(readfile('tests/data/records/' || f)) FROM (SELECT 'empty.pb' f UNION ALL SELECT 'list_3.pb' UNION ALL SELECT 'mlp_dict.pb' UNION ALL SELECT 'unicode_keys.pb'), (SELECT 0 c UNION ALL SELECT 1);
SELECT ar_json(ar_from_npz(ar_to_npz(readfile('tests/data/records/legacy_raw.pb'))));
SELECT length(ar_to_npz(r)), length(ar_to_npz(r, 1)), length(ar_to_npz(r, NULL)) FROM (SELECT readfile('tests/data/records/mlp_dict.pb') r);
SELECT hex(substr(ar_to_npz(ar('a', npy_from_json('[1]', 'uint8'))), 1, 64));
SELECT hex(ar_to_npz(x''));
SELECT ar_keys(ar_from_npz(ar_to_npz(ar('dir/x', npy_from_json('[1]'), '', npy_from_json('[2]')))));

-- Malformed archives and records .npz cannot hold.
SELECT ar_from_npz(x'504b0506');
SELECT ar_from_npz(x'00000000000000000000000000000000000000000000');
SELECT ar_from_npz(CAST(substr(z, 1, 100) || substr(z, 102) AS BLOB)) FROM (SELECT ar_to_npz(readfile('tests/data/records/list_3.pb')) z);
SELECT ar_from_npz(CAST(substr(z, 1, 199) || x'ff' || substr(z, 201) AS BLOB)) FROM (SELECT ar_to_npz(readfile('tests/data/records/list_3.pb')) z);
SELECT ar_to_npz(ar_from_safetensors(x'37000000000000007b2268223a7b226474797065223a2242463136222c227368617065223a5b315d2c22646174615f6f666673657473223a5b302c325d7d7d0000'));
SELECT ar_to_npz(readfile('tests/data/records/list_3.pb'), 'yes');
SELECT ar_to_npz(readfile('tests/data/records/list_3.pb'), 2);
SELECT ar_to_npz(readfile('tests/data/records/list_3.pb'), -1);
SELECT ar_from_npz(NULL), ar_to_npz(NULL), ar_to_npz(NULL, 1), ar_to_safetensors(NULL, '{}');
SELECT ar_from_npz(1);
