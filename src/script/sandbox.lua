-- --script-sandbox: a script one did not write loses what reaches beyond the load (runs commands, writes, renames
-- or deletes files, ends the process, loads C code). Reading files, printing and Lua modules stay.
local open, output, error, tostring = io.open, io.output, error, tostring

local function removed(name)
   return function() error(name .. " is removed by --script-sandbox", 2) end
end

os.execute, os.remove, os.rename, os.exit, os.tmpname =
   removed("os.execute"), removed("os.remove"), removed("os.rename"), removed("os.exit"), removed("os.tmpname")
io.popen, io.tmpfile = removed("io.popen"), removed("io.tmpfile")
package.loadlib = removed("package.loadlib")

-- Files open for reading only ("r", "rb"); io.output() names the current output, never a new file.
function io.open(name, mode)
   if mode ~= nil and mode ~= "r" and mode ~= "rb" then
      error("io.open(" .. tostring(name) .. ", '" .. tostring(mode) .. "'): --script-sandbox opens files for reading only", 2)
   end
   return open(name, mode)
end
function io.output(file)
   if file ~= nil then error("io.output(file): --script-sandbox writes no files", 2) end
   return output()
end

-- require finds Lua modules only: the C searchers (package.cpath, all-in-one) are gone.
package.cpath = ""
for i = #package.loaders, 3, -1 do package.loaders[i] = nil end
