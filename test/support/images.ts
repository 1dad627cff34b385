// Images for multimodal requests to the engine simulator: the first bytes of a PNG (signature and
// IHDR size) are all it reads, so a 32-byte buffer stands for an image of any size; `salt` makes
// another image of the same size (another mm_hash).
export function pngHeader(width: number, height: number, salt = 0): Buffer {
  const bytes = Buffer.alloc(32);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes, 0);
  bytes.writeUInt32BE(13, 8);
  bytes.write("IHDR", 12, "latin1");
  bytes.writeUInt32BE(width, 16);
  bytes.writeUInt32BE(height, 20);
  bytes.writeUInt32BE(salt, 28);
  return bytes;
}

export const pngDataUrl = (width: number, height: number, salt = 0) => `data:image/png;base64,${pngHeader(width, height, salt).toString("base64")}`;
