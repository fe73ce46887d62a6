// zarrita.js (the JavaScript zarr reader behind browser viewers) reads zarr v3 arrays for
// tests/interop/interop_others.py, which compares the values with ours bit for bit.
//
//   node tests/interop/interop_zarrita.mjs version
//   node tests/interop/interop_zarrita.mjs read STORE OUT [SELECTION]
//   node tests/interop/interop_zarrita.mjs serve      (one JSON request per line on stdin:
//                                               {"store": ..., "out": ..., "selection": ...})
//
// ZARRITA_DIR names the folder where .ci/interop-zarrita/ was installed with npm (it holds
// node_modules/zarrita). SELECTION is JSON, [[start, stop], ...] per dimension (a box); without
// it the whole array is read. The decoded values go to OUT as their raw bytes in this machine's
// byte order (checked to be little-endian), so that no value passes through JSON. The answer is
// one JSON line on stdout: {"data_type", "shape", "stride"} (strides in elements), or
// {"error": [messages of the error and of its causes]} when zarrita refuses or fails (`read`
// then exits with status 2). Any other status, or a line that is no such answer, is a failure of
// this script.

import { readFileSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { endianness } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

function usage(message) {
	process.stderr.write(`${message}\nusage: interop_zarrita.mjs version | read STORE OUT [SELECTION] | serve\n`);
	process.exit(64);
}

async function load(pkg, subpath) {
	const dir = process.env.ZARRITA_DIR;
	if (!dir) usage("ZARRITA_DIR is not set: the folder where .ci/interop-zarrita/ was installed with npm");
	const root = join(dir, "node_modules", pkg);
	const meta = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
	const entry = meta.exports[subpath].import;
	return { module: await import(pathToFileURL(join(root, entry)).href), version: meta.version };
}

function messages(error) {
	const out = [];
	for (let e = error; e != null && out.length < 8; e = e.cause) {
		out.push(e instanceof Error ? `${e.name}: ${e.message}` : String(e));
	}
	return out;
}

async function read(storePath, outPath, selection) {
	const zarr = (await load("zarrita", ".")).module;
	const FileSystemStore = (await load("@zarrita/storage", "./fs")).module.default;
	let array;
	let chunk;
	try {
		array = await zarr.open(new FileSystemStore(storePath), { kind: "array" });
		const box = selection == null ? null : selection.map(([start, stop]) => zarr.slice(start, stop));
		chunk = await zarr.get(array, box);
	} catch (error) {
		return { error: messages(error) };
	}
	const data = chunk.data;
	const length = data.byteLength ?? data.length * data.BYTES_PER_ELEMENT;
	if (!(data.buffer instanceof ArrayBuffer) || typeof length !== "number") {
		throw new Error(`zarrita returned a ${data.constructor.name}, whose bytes this script cannot take`);
	}
	writeFileSync(outPath, new Uint8Array(data.buffer, data.byteOffset, length));
	return { data_type: array.dtype, shape: chunk.shape, stride: chunk.stride, container: data.constructor.name };
}

function answer(value) {
	process.stdout.write(`${JSON.stringify(value)}\n`);
}

async function main() {
	if (endianness() !== "LE") usage("this script writes values in this machine's byte order: little-endian only");
	const [command, ...args] = process.argv.slice(2);
	if (command === "version") {
		const zarrita = await load("zarrita", ".");
		const storage = await load("@zarrita/storage", "./fs");
		answer({ zarrita: zarrita.version, storage: storage.version, node: process.versions.node });
	} else if (command === "read" && (args.length === 2 || args.length === 3)) {
		const result = await read(args[0], args[1], args[2] === undefined ? null : JSON.parse(args[2]));
		answer(result);
		if (result.error) process.exit(2);
	} else if (command === "serve" && args.length === 0) {
		for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
			if (!line.trim()) continue;
			const request = JSON.parse(line);
			answer(await read(request.store, request.out, request.selection ?? null));
		}
	} else {
		usage(`unknown command: ${[command, ...args].join(" ")}`);
	}
}

await main();
